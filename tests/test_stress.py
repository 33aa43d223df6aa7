"""Stress: many worker processes on one grid, on every storage, with CPU load beside them. Each cell
must end COMPLETE exactly once, nothing may be left RUNNING or WAITING, and no worker may log the
errors of two workers that took the same trial (IntegrityError on the metrics table,
UpdateFinishedTrialError). Trials are a few steps long so that the workers claim trials often and at
the same time: before claims were atomic on SQLite, a round like this failed most of the time."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from optuna.trial import TrialState

from tests.study_helpers import cli, lp_env, start_worker, trials_of, wait_all

pytestmark = [pytest.mark.stress, pytest.mark.slow]

N_WORKERS = 6
P_VALUES = "1,1.5,2,2.5,3,4"  # × 5 folds = 30 cells
FOLDS = 5
# a trial of two steps and two evaluations: the claims of six workers overlap all the time
SHORT = ["--set", "max_steps=2", "--set", "eval_interval=1", "--set", "eval_iters=1"]
BAD = ("IntegrityError", "UpdateFinishedTrialError", "Traceback")


def busy_loops(n: int) -> list[subprocess.Popen]:
    """CPU load beside the workers, as on a shared machine."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run_round(capsys, storage: str, study: str, tmp_path, create_storage: str | None = None) -> None:
    code, _, err = cli(capsys, "replicate", "--study", study, "--storage", create_storage or storage,
                       "--preset", "smoke", "--p", P_VALUES, "--folds", str(FOLDS), *SHORT)
    assert code == 0, err
    load = busy_loops(1)
    try:
        logs = [tmp_path / f"{study}-w{i}.log" for i in range(N_WORKERS)]
        workers = [start_worker(study, storage, log=log, env=lp_env()) for log in logs]
        codes = wait_all(workers, timeout=900)  # a hang guard only: six torch imports beside a load average of 90 took over 200 s
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    texts = [log.read_text() for log in logs]
    assert codes == [0] * N_WORKERS, texts
    for text in texts:
        for bad in BAD:
            assert bad not in text, text
    trials = trials_of(create_storage or storage, study)
    states = Counter(t.state for t in trials)
    assert states[TrialState.RUNNING] == 0 and states[TrialState.WAITING] == 0, states
    complete = Counter((t.params["p"], t.params["fold"]) for t in trials if t.state == TrialState.COMPLETE)
    assert len(complete) == 30 and set(complete.values()) == {1}, complete
    assert len(trials) == 30, states  # no cell was enqueued again, none failed


@pytest.mark.parametrize("round_", range(2))
def test_sqlite_each_cell_complete_exactly_once_under_load(sqlite_url, tmp_path, capsys, round_):
    run_round(capsys, sqlite_url, f"stress{round_}", tmp_path)


def test_journal_each_cell_complete_exactly_once_under_load(tmp_path, capsys):
    run_round(capsys, f"journal:///{tmp_path / 'study.log'}", "stress", tmp_path)


@pytest.mark.postgres
def test_postgres_each_cell_complete_exactly_once_under_load(pg_url, tmp_path, capsys):
    run_round(capsys, pg_url, "stress", tmp_path)


@pytest.mark.postgres
def test_grpc_each_cell_complete_exactly_once_under_load(pg_url, tmp_path, capsys):
    from tests.test_grpc_proxy import RunningProxy

    proxy = RunningProxy(pg_url)
    try:
        run_round(capsys, proxy.grpc_url, "stress", tmp_path, create_storage=None)
    finally:
        proxy.stop()
