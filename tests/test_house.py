"""The layout keeps its promises: the read side (db/, results/, cli/, the dashboard) starts without
torch, every command that only reads runs without importing it, and no module imports itself back
through another at import time."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lpstudy.study.synthetic import write_synthetic_study

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lpstudy"

# Runs a command in a fresh interpreter and prints, as its last line, whether torch was imported.
RUN_AND_REPORT = """
import json, sys
sys.argv = ['lpstudy', *json.loads(sys.argv[1])]
from lpstudy.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({'torch': 'torch' in sys.modules, 'code': code}))
"""


def run_cli_fresh(*args: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN_AND_REPORT, json.dumps(list(args))], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env={**os.environ, **(env or {})})
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def study_db(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('house') / 'study.db'}"
    write_synthetic_study(url, "s", n_trials=12, n_evals=4, preset="smoke")
    return url


@pytest.mark.parametrize("args", [
    ("--help",), ("status", "--help"), ("worker", "--help"), ("train", "--help"), ("dashboard", "--help"),
])
def test_help_imports_no_torch(args):
    result = run_cli_fresh(*args)
    assert result["code"] in (0, None), result["stderr"]
    assert result["torch"] is False


def test_reading_commands_import_no_torch(study_db, tmp_path):
    for args in (("status", "--study", "s", "--storage", study_db),
                 ("status", "--study", "s", "--storage", study_db, "--json"),
                 ("export", "--study", "s", "--storage", study_db, "-o", str(tmp_path / "best.yaml")),
                 ("report", "--study", "s", "--storage", study_db, "-o", str(tmp_path / "r.html"))):
        result = run_cli_fresh(*args)
        assert result["code"] in (0, None), result["stderr"]
        assert result["torch"] is False, args
    assert (tmp_path / "best.yaml").is_file() and (tmp_path / "r.html").is_file()


def test_the_dashboard_draws_every_page_without_torch(study_db):
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT / 'app')!r})
os.environ['LPSTUDY_STORAGE'] = {study_db!r}
from streamlit.testing.v1 import AppTest
for page in (None, 'views/effect_of_p.py', 'views/convergence.py', 'views/stability.py', 'views/trials.py',
             'views/export.py'):
    at = AppTest.from_file({str(ROOT / 'app' / 'dashboard.py')!r}, default_timeout=60).run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, (page, at.exception)
print('torch' in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def module_imports(path: Path) -> set[str]:
    """The lpstudy modules a file imports at module level (not inside functions)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports do not run
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("lpstudy")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lpstudy"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists() else node.module)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycle_and_the_read_side_never_reaches_torch_code():
    graph = {module_name(p): module_imports(p) for p in PACKAGE.rglob("*.py")}
    # no cycle among module-level imports
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2 or name not in graph:
            return
        assert state.get(name) != 1, f"import cycle: {' -> '.join(trail + [name])}"
        state[name] = 1
        for dep in graph[name]:
            visit(dep, trail + [name])
        state[name] = 2

    for name in graph:
        visit(name, [])

    # what db/, results/ and cli/ reach at import time holds no torch code
    torch_modules = {n for n, p in ((module_name(p), p) for p in PACKAGE.rglob("*.py"))
                     if "import torch" in p.read_text().split("\ndef ", 1)[0]}
    assert {"lpstudy.model.lpnorm", "lpstudy.training.trainer", "lpstudy.training.data"} <= torch_modules

    def reach(name: str, seen: set[str]) -> set[str]:
        for dep in graph.get(name, ()):
            if dep not in seen:
                seen.add(dep)
                reach(dep, seen)
        return seen

    for name in graph:
        if name.startswith(("lpstudy.db", "lpstudy.results", "lpstudy.cli")) or name == "lpstudy":
            assert not reach(name, set()) & torch_modules, name
