"""Trials resume from their last checkpoint: a worker killed (SIGKILL) or stopped (SIGTERM) in the
middle of a trial leaves a checkpoint in Optuna's artifact store; the trial's retry loads it, its
curve starts after the checkpoint's step (not at step 0), and on CPU with the same thread count it
ends with exactly the validation loss of the run that was never interrupted. Checkpoints of
completed trials are removed."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from optuna.trial import TrialState

from lpstudy.study.checkpoints import CHECKPOINT_ATTR
from tests.once_per_run import once_per_run
from tests.study_helpers import cli, metrics_steps, start_worker, trials_of, wait_all, wait_for

pytestmark = pytest.mark.slow  # the slow tier: `pytest -m slow`

RUN = ["--set", "max_steps=200", "--set", "eval_interval=10", "--set", "eval_iters=2"]
STEPS = list(range(0, 201, 10))


def _replicate(capsys, url: str) -> None:
    code, _, err = cli(capsys, "replicate", "--study", "r", "--storage", url, "--preset", "smoke", "--p", "2",
                       "--folds", "2", "--checkpoint-interval", "2", "--heartbeat-interval", "1",
                       "--grace-period", "3", *RUN)
    assert code == 0, err


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[int, float]:
    """fold -> final validation loss of the same cells run without interruption; run once per test
    run (tests/once_per_run.py), however many xdist workers run this module's tests."""
    return once_per_run(tmp_path_factory, "resume-baseline", _run_uninterrupted)


def _run_uninterrupted(folder: Path) -> dict[int, float]:
    url = f"sqlite:///{folder / 'b.db'}"
    from lpstudy.cli import main

    try:
        main(["replicate", "--study", "r", "--storage", url, "--preset", "smoke", "--p", "2", "--folds", "2",
              "--checkpoint-interval", "0", *RUN])
    except SystemExit as exc:
        assert not exc.code
    assert wait_all([start_worker("r", url, log=folder / "w.log")]) == [0], (folder / "w.log").read_text()
    return {t.params["fold"]: t.value for t in trials_of(url, "r") if t.state == TrialState.COMPLETE}


@pytest.mark.parametrize("signum,kind", [(signal.SIGKILL, "sqlite"), (signal.SIGTERM, "sqlite"),
                                         (signal.SIGKILL, "journal")],
                         ids=["sigkill", "sigterm", "sigkill-journal"])
def test_an_interrupted_trial_resumes_from_its_checkpoint_with_the_uninterrupted_loss(
        tmp_path, capsys, uninterrupted, signum, kind):
    # journal: no Optuna heartbeats; the dead worker's trial is found by lpstudy's lease
    url = f"sqlite:///{tmp_path / 's.db'}" if kind == "sqlite" else f"journal:///{tmp_path / 's.log'}"
    store = Path(f"{tmp_path / ('s.db' if kind == 'sqlite' else 's.log')}.artifacts")
    _replicate(capsys, url)
    first = start_worker("r", url, log=tmp_path / "w1.log")

    def checkpointed():
        for t in trials_of(url, "r"):
            meta = t.system_attrs.get(CHECKPOINT_ATTR)
            if t.state == TrialState.RUNNING and meta and meta["step"] >= 40:
                return t
        return None

    victim = wait_for(checkpointed, timeout=120, what="a checkpoint at step 40 or later")
    os.kill(first.pid, signum)
    first.wait(60)
    second = start_worker("r", url, log=tmp_path / "w2.log")
    assert wait_all([second]) == [0], (tmp_path / "w2.log").read_text()

    trials = {t.number: t for t in trials_of(url, "r")}
    dead = trials[victim.number]
    assert dead.state == TrialState.FAIL
    saved_step = dead.system_attrs[CHECKPOINT_ATTR]["step"]
    retry = [t for t in trials.values() if t.system_attrs.get("failed_trial") == victim.number]
    assert len(retry) == 1 and retry[0].state == TrialState.COMPLETE
    retry = retry[0]
    assert retry.user_attrs["resumed_from_step"] == saved_step >= 40
    if kind == "sqlite":
        steps = metrics_steps(url, "r")[retry._trial_id]
    else:
        steps = sorted(int(k.split(":")[1]) for k in retry.system_attrs if k.startswith("lpstudy_metrics:"))
    assert steps == [s for s in STEPS if s > saved_step]  # each step once, after the checkpoint
    assert retry.value == uninterrupted[retry.params["fold"]]  # exactly, not approximately
    done = [t for t in trials.values() if t.state == TrialState.COMPLETE]
    assert sorted(t.params["fold"] for t in done) == [0, 1]
    assert all(t.value == uninterrupted[t.params["fold"]] for t in done)
    assert store.is_dir() and not [p for p in store.rglob("*") if p.is_file()]  # completed: removed
