"""The layout keeps its promises: the read side (db/, results/, cli/, the dashboard) starts without
torch, every command that only reads runs without importing it, no module imports itself back
through another (counting imports inside functions), and the parts of the house import one way."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lpstudy"

# Runs commands one after another in one fresh interpreter and prints, after each, a line saying
# whether torch was imported so far and whether Optuna's storage was opened (Optuna's RDB storage
# loads its table models and alembic when it is opened, not when optuna is imported).
RUN_AND_REPORT = """
import json, sys
from lpstudy.cli import main
for args in json.loads(sys.argv[1]):
    sys.argv = ['lpstudy', *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    print('@@', json.dumps({'torch': 'torch' in sys.modules, 'code': code,
                            'optuna_storage': 'optuna.storages._rdb.models' in sys.modules or 'alembic' in sys.modules}))
"""


def run_cli_fresh(*commands: tuple[str, ...]) -> list[dict]:
    """What RUN_AND_REPORT says after each command, run in order in one new interpreter: a module
    imported by a command is still there after the next, so a False after the last one is False
    for all of them."""
    done = subprocess.run([sys.executable, "-c", RUN_AND_REPORT, json.dumps([list(c) for c in commands])],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    reports = [json.loads(line[3:]) for line in done.stdout.splitlines() if line.startswith("@@ ")]
    assert len(reports) == len(commands), done.stderr[-3000:]
    return reports


@pytest.fixture
def study_db(seeded) -> str:
    """The seeded search and grid studies' database (tests/conftest.py)."""
    return seeded[0]


def test_help_imports_no_torch():
    commands = [("--help",), ("status", "--help"), ("worker", "--help"), ("train", "--help"), ("dashboard", "--help")]
    for args, result in zip(commands, run_cli_fresh(*commands)):
        assert result["code"] in (0, None) and result["torch"] is False, (args, result)


def test_status_and_export_import_no_torch_and_never_open_optunas_storage(study_db, tmp_path):
    """They answer from SQL (lpstudy.results.reading.summary, lpstudy.results.export.chosen_from_sql):
    opening Optuna's storage (its schema check) was most of a second of each command's time."""
    commands = [("status", "--study", "search", "--storage", study_db),
                ("status", "--study", "search", "--storage", study_db, "--json"),
                ("export", "--study", "search", "--storage", study_db, "-o", str(tmp_path / "best.yaml"))]
    for args, result in zip(commands, run_cli_fresh(*commands)):
        assert result["code"] in (0, None), (args, result)
        assert result["torch"] is False and result["optuna_storage"] is False, (args, result)
    assert "source:" in (tmp_path / "best.yaml").read_text()


@pytest.mark.slow
def test_the_report_and_the_status_of_a_grid_import_no_torch(study_db, tmp_path):
    commands = [("report", "--study", "search", "--storage", study_db, "-o", str(tmp_path / "r.html")),
                ("status", "--study", "grid", "--storage", study_db)]
    for args, result in zip(commands, run_cli_fresh(*commands)):
        assert result["code"] in (0, None) and result["torch"] is False, (args, result)
    assert (tmp_path / "r.html").is_file()


@pytest.mark.slow
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


# -- the import graph ---------------------------------------------------------------------------

def source_modules(roots: dict[str, Path]) -> dict[str, Path]:
    """Every module under the roots by its dotted name ({"lpstudy": lpstudy/, "app": app/}: the
    dashboard's pages are app.views.NAME); a package by its own name (its __init__.py)."""
    modules = {}
    for top, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join((top, *parts))] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING")


def imported_modules(name: str, path: Path, modules: dict[str, Path], at_import_time: bool = False) -> set[str]:
    """The modules of `modules` that module `name` (its file `path`) imports: every `import` and
    `from ... import` at any depth (inside functions, methods, try and if blocks), relative names
    resolved, `from X import Y` counted as X.Y where Y is a module, else as X. Imports under
    `if TYPE_CHECKING:` never run and do not count. at_import_time: only what runs when the module
    is imported (no function bodies). A bare name that is a sibling top-level module (the
    dashboard's `from common import ...`, run with app/ on sys.path) resolves to it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = name.split(".")[0]

    def resolve(target: str) -> str | None:
        for candidate in (target, f"{top}.{target}"):
            if candidate in modules:
                return candidate
        return None

    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                for rest in child.orelse:
                    visit_one(rest)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if at_import_time and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                target = resolve(f"{base}.{alias.name}") or resolve(base)
                if target:
                    found.add(target)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(name)
    return found


def import_graph(roots: dict[str, Path], at_import_time: bool = False) -> dict[str, set[str]]:
    modules = source_modules(roots)
    return {name: imported_modules(name, path, modules, at_import_time) for name, path in modules.items()}


def layer_of(name: str, parts_of_the_house: set[str]) -> str:
    """The part of the house a module belongs to: the innermost of its enclosing packages that is a
    part (lpstudy.results.answers before lpstudy.results, app, ...), else the module itself (lpstudy.values)."""
    dotted = name.split(".")
    for n in range(len(dotted), 0, -1):
        if ".".join(dotted[:n]) in parts_of_the_house:
            return ".".join(dotted[:n])
    return name


def layer_graph(graph: dict[str, set[str]], parts_of_the_house: set[str]) -> dict[str, dict[str, str]]:
    """Which layer imports which, each edge with one import that makes it ('a.x -> b.y')."""
    layers: dict[str, dict[str, str]] = {}
    for name, deps in sorted(graph.items()):
        mine = layer_of(name, parts_of_the_house)
        layers.setdefault(mine, {})
        for dep in sorted(deps):
            theirs = layer_of(dep, parts_of_the_house)
            if theirs != mine:
                layers[mine].setdefault(theirs, f"{name} -> {dep}")
    return layers


def find_cycle(graph: dict) -> list[str] | None:
    """One cycle of the directed graph {node: its successors} as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt) and nxt in graph:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


ROOTS = {"lpstudy": PACKAGE, "app": ROOT / "app"}
# lpstudy's packages, the read side's sub-packages (its top modules, pages, report, status, export,
# are lpstudy.results's part) and the dashboard
PARTS_OF_THE_HOUSE = ({f"lpstudy.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")} | {"app"}
                      | {f"lpstudy.results.{p.parent.name}" for p in (PACKAGE / "results").glob("*/__init__.py")})
# What lies above the study engine: the read side and the front ends.
READ_SIDE = {"lpstudy.results", "lpstudy.results.reading", "lpstudy.results.tables", "lpstudy.results.charts",
             "lpstudy.results.replay", "lpstudy.cli", "app"}
# What lies below it: the statistics, the study's rows and design, storage, training and the model.
BELOW_THE_READ_SIDE = ("lpstudy.model", "lpstudy.training", "lpstudy.db", "lpstudy.design", "lpstudy.study",
                       "lpstudy.results.answers", "lpstudy.results.analysis", "lpstudy.results.rows")


def test_no_module_imports_itself_back_not_even_inside_a_function():
    cycle = find_cycle(import_graph(ROOTS))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_parts_of_the_house_import_one_way():
    """model, training, db, design, study, the read side's parts (reading, analysis, answers, rows,
    tables, charts, replay, its top modules), cli and the dashboard: no part imports one that imports
    it back, through any module and at any depth (inside functions too), and nothing below the read
    side imports it: the stage engine reads the study's rows (lpstudy.results.rows) and hands them to
    the statistics. The order of the layers is pyproject.toml's [tool.importlinter] (tests/test_layers.py)."""
    layers = layer_graph(import_graph(ROOTS), PARTS_OF_THE_HOUSE)
    cycle = find_cycle(layers)
    assert cycle is None, "the parts import each other back: " + "; ".join(
        layers[a][b] for a, b in zip(cycle, cycle[1:]))
    for low in BELOW_THE_READ_SIDE:
        for high in READ_SIDE:
            assert high not in layers[low], layers[low][high]


def test_the_import_graph_sees_what_todays_checks_missed(tmp_path):
    """The checker itself can fail: a tree with the two cycles the module-level check let through
    (a module imported back from inside a function, as cli/study.py did with cli/compare.py; two
    parts importing each other through an import inside a function, as study/compare.py and
    results/reading/compare.py did) and a relative import; imports under TYPE_CHECKING do not count."""
    pkg = tmp_path / "pkg"
    for folder, files in {"cli": {"study.py": "from pkg.cli import compare\n",
                                  "compare.py": "def f():\n    from pkg.cli.study import x\n"},
                          "study": {"pair.py": "class C:\n    def m(self):\n        from ..results import best\n"},
                          "results": {"best.py": "", "pair.py": "try:\n    from pkg.study.pair import C\nexcept ImportError:\n    pass\n"},
                          "model": {"gpt.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.cli import study\n"}}.items():
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        for file, text in files.items():
            (pkg / folder / file).write_text(text)
    (pkg / "__init__.py").write_text("")
    roots = {"pkg": pkg}
    graph = import_graph(roots)
    assert graph["pkg.cli.compare"] == {"pkg.cli.study"} and graph["pkg.study.pair"] == {"pkg.results.best"}
    assert graph["pkg.model.gpt"] == set()
    assert find_cycle(graph) == ["pkg.cli.compare", "pkg.cli.study", "pkg.cli.compare"]
    assert import_graph(roots, at_import_time=True)["pkg.cli.compare"] == set()
    graph["pkg.cli.compare"] = set()
    assert find_cycle(graph) is None  # module by module, the other cycle is invisible ...
    layers = layer_graph(graph, {"pkg.cli", "pkg.study", "pkg.results", "pkg.model"})
    assert find_cycle(layers) == ["pkg.results", "pkg.study", "pkg.results"]  # ... part by part, not
    assert layers["pkg.study"]["pkg.results"] == "pkg.study.pair -> pkg.results.best"


def test_the_read_side_never_reaches_torch_code_at_import_time():
    graph = import_graph(ROOTS, at_import_time=True)
    # what db/, results/, cli/ and the dashboard reach at import time holds no torch code
    torch_modules = {n for n, p in source_modules(ROOTS).items()
                     if "import torch" in p.read_text().split("\ndef ", 1)[0]}
    assert {"lpstudy.model.lpnorm", "lpstudy.training.trainer", "lpstudy.training.data"} <= torch_modules

    def reach(name: str, seen: set[str]) -> set[str]:
        for dep in graph.get(name, ()):
            if dep not in seen:
                seen.add(dep)
                reach(dep, seen)
        return seen

    for name in graph:
        if name.startswith(("lpstudy.db", "lpstudy.results", "lpstudy.cli", "app")) or name == "lpstudy":
            assert not reach(name, set()) & torch_modules, name


# The questions a storage kind answers inside lpstudy/db only: outside it, a caller asks the storage
# object to act (StudyStorage's methods, lpstudy.db.trial_reader) and never which kind it holds.
STORAGE_FLAGS = {"sql", "curves_in_table", "optuna_heartbeats", "has_lock"}


def storage_flag_reads(roots: dict[str, Path], inside: Path) -> list[str]:
    """'file:line: .flag' for every read of a storage kind's capability flag (an attribute named as
    one of STORAGE_FLAGS) in the modules under roots that are not under `inside`."""
    found = []
    for path in sorted(p for folder in roots.values() for p in folder.rglob("*.py")):
        if path.is_relative_to(inside):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in STORAGE_FLAGS:
                found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: "
                             f".{node.attr}")
    return found


def test_no_caller_outside_the_storage_layer_asks_which_kind_of_storage_it_holds():
    found = storage_flag_reads({**ROOTS, "benchmarks": ROOT / "benchmarks"}, PACKAGE / "db")
    assert not found, "a storage kind's flag read outside lpstudy/db (ask the storage object instead):\n" + \
        "\n".join(found)


def storage_detail_reads(roots: dict[str, Path], inside: Path) -> list[str]:
    """'file:line: what' for each place outside `inside` that reaches into a storage's details rather
    than asking the storage: Optuna's heartbeat settings (`<x>.optuna.heartbeat_interval`), `hasattr`
    on a storage (`hasattr(storage..., ...)`), a reader's raw SQL answer (`reader.answer(...)`), and
    whether it has an engine (`<x>.engine is None`, `engine is not None`: "is this SQL?" asked of
    the object instead of asking it to act)."""
    found = []
    for path in sorted(p for folder in roots.values() for p in folder.rglob("*.py")):
        if path.is_relative_to(inside):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{getattr(node, 'lineno', '?')}"
            if (isinstance(node, ast.Attribute) and node.attr in ("heartbeat_interval", "grace_period")
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "optuna"):
                found.append(f"{where}: .optuna.{node.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr"
                    and node.args and "storage" in ast.unparse(node.args[0])):
                found.append(f"{where}: hasattr({ast.unparse(node.args[0])}, ...)")
            if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))
                    and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None
                    and ast.unparse(node.left).split(".")[-1] == "engine"):
                found.append(f"{where}: {ast.unparse(node)}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "answer"
                    and "reader" in ast.unparse(node.func.value)):
                found.append(f"{where}: {ast.unparse(node.func.value)}.answer(...)")
    return found


def test_no_caller_outside_the_storage_layer_reaches_into_a_storage():
    found = storage_detail_reads({**ROOTS, "benchmarks": ROOT / "benchmarks"}, PACKAGE / "db")
    assert not found, "a storage's detail read outside lpstudy/db (ask the storage object instead):\n" + \
        "\n".join(found)


def test_the_storage_detail_check_finds_each_reach(tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "inside.py").write_text("x = storage.optuna.heartbeat_interval\n")
    (tmp_path / "worker.py").write_text("a = storage.optuna.heartbeat_interval\nb = hasattr(storage.optuna, 'close')\n"
                                        "c = reader.answer('s', read)\nd = spec.heartbeat_interval\n"
                                        "if storage.engine is not None:\n    pass\nif engine is None:\n    pass\n"
                                        "if engine_name is None:\n    pass\n")
    assert [line.split(": ", 1)[1] for line in storage_detail_reads({"pkg": tmp_path}, tmp_path / "db")] == [
        ".optuna.heartbeat_interval", "hasattr(storage.optuna, ...)", "reader.answer(...)",
        "storage.engine is not None", "engine is None"]


def test_the_storage_flag_check_finds_a_flag_read(tmp_path):
    """The checker itself can fail: a caller that branches on the kind is named with its line, in
    code and not in a comment or a string; the storage layer itself may read its flags."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "kinds.py").write_text("if kind.sql:\n    pass\n")
    (tmp_path / "worker.py").write_text("# storage.kind.sql in a comment\ntext = 'kind.has_lock'\n"
                                        "if storage.kind.curves_in_table:\n    pass\n")
    assert storage_flag_reads({"pkg": tmp_path}, tmp_path / "db") == [f"{tmp_path / 'worker.py'}:3: .curves_in_table"]


def optional_storage_parameters(folder: Path) -> list[str]:
    """'file:line: name' for each function under folder with a `storage` parameter that defaults to
    None: a second code path for callers that pass no storage."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *zip(args.kwonlyargs, args.kw_defaults)]
            for arg, default in pairs:
                if arg.arg == "storage" and isinstance(default, ast.Constant) and default.value is None:
                    found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: "
                                 f"{getattr(node, 'name', 'lambda')}")
    return found


def test_the_study_layer_takes_its_storage_as_a_required_argument():
    found = optional_storage_parameters(PACKAGE / "study")
    assert not found, "a `storage=None` parameter in lpstudy/study (make the storage required):\n" + "\n".join(found)


def test_the_optional_storage_check_finds_one(tmp_path):
    (tmp_path / "claims.py").write_text("def pop(study, storage=None):\n    pass\n"
                                        "def ask(study, *, storage: object = None):\n    pass\n"
                                        "def fine(study, storage, other=None):\n    pass\n")
    assert [line.split(": ", 1)[1] for line in optional_storage_parameters(tmp_path)] == ["pop", "ask"]


# -- the stage engine ---------------------------------------------------------------------------

# What a study run --until-decided does between its stages: enqueue the next stage's cells (a
# replicate's round, a comparison's stage) once the verdicts decided which arms get them; and the
# decider that runs them (the study layer's decider_for gives it to a worker).
STAGE_STEPS = {"enqueue_round", "enqueue_stage", "next_stage", "Stages"}
# What runs a worker; the command line hands it its options, its storage, where it says things and
# the decider the study layer picked (lpstudy.study.deciders.decider_for).
WORKER_RUNNERS = {"run_worker", "spawn_workers", "run_with_progress"}


def stage_logic_outside(roots: dict[str, Path], inside: Path) -> list[str]:
    """'file:line: what' for a stage step called outside `inside` (the study layer), and for a call
    to a worker runner that hands it a function (a lambda, or an argument named for a stage or a
    round): stage logic handed to the worker as a callback."""
    found = []
    for path in sorted(p for folder in roots.values() for p in folder.rglob("*.py")):
        if path.is_relative_to(inside):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}"
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in STAGE_STEPS:
                found.append(f"{where}: {name}(...)")
            if name in WORKER_RUNNERS:
                for arg in [*node.args, *node.keywords]:
                    value = arg.value if isinstance(arg, ast.keyword) else arg
                    keyword = arg.arg if isinstance(arg, ast.keyword) else None
                    if keyword == "say":  # where it says things: the one function it may be handed
                        continue
                    if isinstance(value, ast.Lambda) or (keyword and ("stage" in keyword or "round" in keyword)):
                        found.append(f"{where}: {name}({keyword or 'a lambda'}=...)")
    return found


def test_the_stage_engine_is_the_study_layers_and_the_command_line_hands_the_worker_no_stage_logic():
    """`replicate --until-decided` and `compare --until-decided` take their stages from one function
    of lpstudy/study (stages.next_stage), which the worker calls itself: the command line (and the
    dashboard) neither runs a stage step nor hands the worker one."""
    from lpstudy.study import stages

    assert callable(stages.next_stage)
    found = stage_logic_outside(ROOTS, PACKAGE / "study")
    assert not found, "stage logic outside lpstudy/study:\n" + "\n".join(found)


def test_the_stage_logic_check_finds_a_stage_step_and_a_callback(tmp_path):
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "stages.py").write_text("def next_stage(s, n):\n    return enqueue_round(s, n, [], 3)\n")
    (tmp_path / "cli.py").write_text("def next_round(s, n):\n    return enqueue_round(s, n, [], 3)\n"
                                     "run_worker(o, s, say=say, next_stage=lambda s, n: next_round(s, n))\n"
                                     "run_rounds(o, say, s)\nrun_worker(o, storage=s, say=lambda m: print(m))\n")
    assert sorted(line.split(": ", 1)[1] for line in stage_logic_outside({"pkg": tmp_path}, tmp_path / "study")) == [
        "enqueue_round(...)", "run_worker(next_stage=...)"]


# -- the storage layer ------------------------------------------------------------------------------

def db_import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle among the modules of lpstudy/db, counting every import: inside functions, and under
    TYPE_CHECKING too (a type a module names is a module it depends on)."""
    inside = {name: {dep for dep in deps if dep.startswith("lpstudy.db")}
              for name, deps in graph.items() if name.startswith("lpstudy.db")}
    return find_cycle(inside)


def import_graph_with_types(roots: dict[str, Path]) -> dict[str, set[str]]:
    """import_graph, with the imports under TYPE_CHECKING counted."""
    original = globals()["_type_checking_only"]
    globals()["_type_checking_only"] = lambda node: False
    try:
        return import_graph(roots)
    finally:
        globals()["_type_checking_only"] = original


def test_no_module_of_the_storage_layer_imports_itself_back_not_even_for_a_type():
    cycle = db_import_cycle(import_graph_with_types(ROOTS))
    assert cycle is None, "import cycle in lpstudy/db: " + " -> ".join(cycle)


def test_the_storage_cycle_check_counts_an_import_for_a_type(tmp_path):
    pkg = tmp_path / "lpstudy"
    (pkg / "db").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "db" / "__init__.py").write_text("")
    (pkg / "db" / "a.py").write_text("from lpstudy.db.b import B\n")
    (pkg / "db" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lpstudy.db.a import A\n")
    assert db_import_cycle(import_graph({"lpstudy": pkg})) is None
    assert db_import_cycle(import_graph_with_types({"lpstudy": pkg})) == ["lpstudy.db.a", "lpstudy.db.b", "lpstudy.db.a"]


def lpstudy_classes_in_order(kind: type) -> list[str]:
    return [cls.__name__ for cls in kind.__mro__ if cls.__module__.split(".")[0] == "lpstudy"]


def test_each_storage_kind_is_at_most_three_lpstudy_classes_its_other_behaviour_composed():
    """A kind, at most one family base (SqlStorage), the storage (StudyStorage): locking, reading and
    a local file are objects composed into it (lpstudy.db.locking, trial_reader, kinds.files), as
    Optuna's JournalStorage takes its backend, rather than mixins stacked in its method order."""
    from lpstudy.db.kinds import KINDS
    from lpstudy.db.kinds.base import StudyStorage

    assert len(KINDS) == 5
    for kind in KINDS:
        order = lpstudy_classes_in_order(kind)
        assert len(order) <= 3 and order[0] == kind.__name__ and order[-1] == "StudyStorage", order
        assert all(issubclass(cls, StudyStorage) for cls in kind.__mro__ if cls.__module__.startswith("lpstudy"))


def test_the_method_order_check_counts_a_mixin():
    class Reads:
        pass

    class Storage:
        pass

    Reads.__module__ = Storage.__module__ = "lpstudy.db.x"

    class Kind(Reads, Storage):
        pass

    Kind.__module__ = "lpstudy.db.kinds.y"
    assert lpstudy_classes_in_order(Kind) == ["Kind", "Reads", "Storage"]
    assert lpstudy_classes_in_order(int) == []


# -- the read side's parts --------------------------------------------------------------------------

MOST_AT_THE_TOP = 15  # modules and packages at lpstudy/results' top level: each part a sub-package


def layout_problems(folder: Path, most: int) -> list[str]:
    """What keeps a package from showing its parts: more than `most` modules and packages at its top
    level (its __init__.py aside), a folder of modules that is no package (no __init__.py), and a
    sub-package whose __init__.py has no docstring saying what it holds (a sentence, at least)."""
    entries = sorted(p for p in folder.iterdir()
                     if (p.suffix == ".py" and p.name != "__init__.py") or (p.is_dir() and any(p.glob("*.py"))))
    found = [f"{folder.name}: {len(entries)} modules and packages at the top, more than {most}"] \
        if len(entries) > most else []
    for package in (p for p in entries if p.is_dir()):
        init = package / "__init__.py"
        if not init.is_file():
            found.append(f"{folder.name}/{package.name}: no __init__.py")
            continue
        words = (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "").split()
        if len(words) < 8:
            found.append(f"{folder.name}/{package.name}/__init__.py: no docstring saying what it holds")
    return found


def test_the_read_side_shows_its_parts():
    """lpstudy/results, 30 % of the code, is a few sub-packages that name its parts (reading, analysis,
    answers, charts, tables, replay) beside the modules every reader starts from (pages, report,
    status, export): a newcomer sees which part a file belongs to, from the folder it is in and the
    docstring of that folder's package."""
    assert layout_problems(PACKAGE / "results", MOST_AT_THE_TOP) == []


def test_the_layout_check_finds_a_crowded_top_a_folder_without_a_package_and_a_silent_one(tmp_path):
    top = tmp_path / "results"
    for folder, init in (("reading", '"""A study read into frames, through the one reader of its storage."""\n'),
                         ("charts", "x = 1\n"), ("loose", None)):
        (top / folder).mkdir(parents=True)
        (top / folder / "a.py").write_text("")
        if init is not None:
            (top / folder / "__init__.py").write_text(init)
    (top / "__init__.py").write_text("")
    for n in range(3):
        (top / f"m{n}.py").write_text("")
    (top / "__pycache__").mkdir()
    assert layout_problems(top, 6) == ["results/charts/__init__.py: no docstring saying what it holds",
                                       "results/loose: no __init__.py"]
    assert layout_problems(top, 5) == ["results: 6 modules and packages at the top, more than 5",
                                       "results/charts/__init__.py: no docstring saying what it holds",
                                       "results/loose: no __init__.py"]
