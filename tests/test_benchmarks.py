"""Every benchmark script starts as its docstring says, `python benchmarks/NAME.py`: `--help` exits 0
with its usage, run from another folder without PYTHONPATH (each script puts the repository root on
sys.path itself and imports its helpers as benchmarks.x and tests.x). mypy checks what they call
(tests/test_types.py); this checks that they get that far."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.study_helpers import ROOT

SCRIPTS = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"))


def test_the_scripts_are_found():
    assert {"bench_storage.py", "bench_load.py", "scale_study.py"} <= set(SCRIPTS), SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_scripts_help(script, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {script} "), done.stdout + done.stderr
