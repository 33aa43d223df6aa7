"""The storage layer is typed strictly: `mypy --strict` over lpstudy/db/ finds nothing (the settings are
pyproject.toml's [tool.mypy]: third-party packages without types read as Any, the rest of lpstudy read
for the types it gives), and the check is one that fails: a wrong attribute planted in a copy of the
package is found."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.study_helpers import ROOT

CACHE = ROOT / ".mypy_cache"  # shared by both runs: the copy's unchanged modules are read from it


def strict_check(root: Path) -> subprocess.CompletedProcess:
    """`mypy --strict lpstudy/db` run in root with its pyproject.toml; files named by path, so that
    the package is root's own (the folder of the files named comes before the environment's paths)."""
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(CACHE), "lpstudy/db"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)


def test_the_storage_layer_is_strictly_typed():
    done = strict_check(ROOT)
    assert done.returncode == 0 and done.stdout.startswith("Success: no issues found"), done.stdout + done.stderr


def test_the_strict_check_finds_a_wrong_attribute_planted_in_a_copy(tmp_path):
    shutil.copytree(ROOT / "lpstudy", tmp_path / "lpstudy", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    sqlite = tmp_path / "lpstudy" / "db" / "kinds" / "sqlite.py"
    text = sqlite.read_text()
    assert "url = self.display_url\n" in text
    sqlite.write_text(text.replace("url = self.display_url\n", "url = self.display_ur1\n", 1))
    done = strict_check(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'lpstudy/db/kinds/sqlite.py' in done.stdout and '"SQLiteStorage" has no attribute "display_ur1"' in done.stdout, \
        done.stdout
