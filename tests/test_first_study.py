"""The README's first command, run exactly as written (its preset, its trial count, its two workers)
on a fresh copy: a study worth looking at, with p's effect drawn from completed trials spread over
the whole searched range."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from tests.study_helpers import lp_env
from tests.test_first_run import _fresh_copy, _readme_commands

pytestmark = pytest.mark.slow


def test_the_readme_first_command_gives_eight_completed_trials_over_every_quarter_of_p(tmp_path):
    from lpstudy.design.spec import build_spec

    repo = _fresh_copy(tmp_path / "lpstudy")
    run, _ = _readme_commands()
    search = run.split("&&")[-1].split()  # as written: no flag added
    result = subprocess.run([sys.executable, "-m", "lpstudy", *search[1:]], cwd=repo, capture_output=True, text=True,
                            env=lp_env(PYTHONPATH=str(repo), LPSTUDY_STORAGE=""), timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    study = optuna.load_study(study_name="lp-search", storage=f"sqlite:///{repo / 'storage' / 'lpstudy.db'}")
    completed = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(completed) >= 8, [t.state for t in study.trials]
    # four equal-width bins of the searched range of p, each holding completed trials
    p_range = build_spec({"preset": "smoke"}).space.get("p")
    width = (p_range.high - p_range.low) / 4
    bins = {min(int((t.params["p"] - p_range.low) / width), 3) for t in completed}
    assert bins == {0, 1, 2, 3}, sorted(t.params["p"] for t in completed)
