"""The layers of lpstudy import one way, as `[tool.importlinter]` in pyproject.toml declares them
(front ends > the read side > the study engine > the statistics > the study's design > storage and
training > plain values): `lint-imports` keeps every contract, every import inside a function
counted, and the check fails when a module imports a layer above its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` over the lpstudy of `root` with the contracts of its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
                          capture_output=True, text=True, timeout=300, cwd=root, env=env)


def layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["id"] == "layers")
    return [[name.strip() for name in line.replace(":", "|").split("|")] for line in contract["layers"]]


def test_every_contract_is_kept():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_part_of_the_package_has_its_layer():
    """A new sub-package or top-level module is placed in a layer, or the contract would not see it
    import upwards: lpstudy's sub-packages and modules, and the read side's."""
    placed = {name for line in layers() for name in line}
    package = ROOT / "lpstudy"
    parts = {f"lpstudy.{p.parent.name}" for p in package.glob("*/__init__.py")}
    parts |= {f"lpstudy.{p.stem}" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    parts |= {f"lpstudy.results.{p.parent.name}" for p in (package / "results").glob("*/__init__.py")}
    parts |= {f"lpstudy.results.{p.stem}" for p in (package / "results").glob("*.py") if p.stem != "__init__"}
    parts.discard("lpstudy.results")  # a package of parts, each placed on its own
    assert parts - placed == set()
    assert placed - parts == set()


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "lpstudy", tmp_path / "lpstudy", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(root: Path, module: str, text: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + text, encoding="utf-8")


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path):
    """The statistics reading the read side from inside a function (as the answers read StudyData from
    lpstudy.results.reading.frames) is seen and named, with the line that makes it."""
    root = copy_of_the_package(tmp_path)
    plant(root, "lpstudy.results.answers.decide",
          "def planted():\n    from lpstudy.results.reading.frames import load_study\n    return load_study\n")
    done = lint_imports(root)
    assert done.returncode != 0
    assert "BROKEN" in done.stdout and "lpstudy.results.answers.decide -> lpstudy.results.reading.frames" in done.stdout


def test_the_study_engine_importing_the_read_side_breaks_the_layers(tmp_path):
    root = copy_of_the_package(tmp_path)
    plant(root, "lpstudy.study.worker", "def planted():\n    from lpstudy.results import status\n    return status\n")
    done = lint_imports(root)
    assert done.returncode != 0
    assert "lpstudy.study.worker -> lpstudy.results.status" in done.stdout


def test_statistics_reading_a_storage_break_their_contract(tmp_path):
    root = copy_of_the_package(tmp_path)
    plant(root, "lpstudy.results.analysis.effect", "from lpstudy.db import urls\n")
    done = lint_imports(root)
    assert done.returncode != 0
    assert "the statistics read no storage" in done.stdout and "BROKEN" in done.stdout
