"""Workers die, are told to stop, and lose their database: no trial is left RUNNING, no completed
trial is lost, a dead worker's trial is retried with the same parameters, and a restarted
PostgreSQL is ridden out."""

from __future__ import annotations

import math
import signal
import time
from collections import Counter

import pytest
import sqlalchemy as sa
from optuna.trial import TrialState

from lpstudy.errors import UserError
from lpstudy.db.optuna_storage import RetryPolicy, StorageUnavailable, is_transient
from tests.study_helpers import cli, metrics_steps, start_worker, trials_of, wait_all, wait_for

# ~2 s a trial: long enough to be caught in the middle of one.
SLOW = ["--set", "max_steps=150", "--set", "eval_interval=10", "--set", "eval_iters=2"]


def _grid(capsys, storage: str, study: str, p: str, folds: int, *extra: str) -> None:
    code, _, err = cli(capsys, "replicate", "--study", study, "--storage", storage, "--preset", "smoke",
                       "--p", p, "--folds", str(folds), *extra)
    assert code == 0, err


def _running_with_metrics(storage: str, study: str):
    for t in trials_of(storage, study):
        if t.state == TrialState.RUNNING and len(t.intermediate_values) >= 2:
            return t
    return None


@pytest.mark.slow
def test_a_killed_workers_trial_is_failed_after_the_grace_period_and_retried(sqlite_url, tmp_path, capsys):
    _grid(capsys, sqlite_url, "kill", "2", 2, *SLOW, "--heartbeat-interval", "1", "--grace-period", "2")
    doomed = start_worker("kill", sqlite_url, log=tmp_path / "doomed.log")
    # let it finish one cell and get well into the second, then kill it without warning
    wait_for(lambda: any(t.state == TrialState.COMPLETE for t in trials_of(sqlite_url, "kill"))
             and _running_with_metrics(sqlite_url, "kill"), timeout=120, what="a completed and a running trial")
    victim = _running_with_metrics(sqlite_url, "kill")
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    assert trials_of(sqlite_url, "kill")[victim.number].state == TrialState.RUNNING  # nobody told Optuna

    rescuer = start_worker("kill", sqlite_url, log=tmp_path / "rescuer.log")
    assert wait_all([rescuer], timeout=120) == [0], (tmp_path / "rescuer.log").read_text()

    trials = trials_of(sqlite_url, "kill")
    assert trials[victim.number].state == TrialState.FAIL
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == victim.number]
    assert len(retries) == 1
    retry = retries[0]
    assert retry.state == TrialState.COMPLETE and retry.params == victim.params
    assert retry.user_attrs["pid"] == rescuer.pid
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert Counter(t.params["fold"] for t in complete) == {0: 1, 1: 1}  # the first cell was not lost
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    # The retry resumes from the victim's last checkpoint (every 5 evaluations: step 50, 100) when it
    # saved one before it was killed, else it starts again; either way the curve runs to the end with
    # no gap: the victim's evaluations up to the checkpoint, the retry's after it.
    steps = metrics_steps(sqlite_url, "kill")
    resumed = retry.user_attrs.get("resumed_from_step")
    if resumed is None:
        assert steps[retry._trial_id] == list(range(0, 151, 10))
    else:
        assert resumed in (50, 100)
        assert steps[retry._trial_id] == list(range(resumed + 10, 151, 10))
        assert steps[victim._trial_id][: resumed // 10 + 1] == list(range(0, resumed + 1, 10))


@pytest.mark.slow
def test_sigterm_ends_the_running_trial_as_failed_and_enqueues_it_again(sqlite_url, tmp_path, capsys):
    _grid(capsys, sqlite_url, "term", "2", 2, "--set", "max_steps=5000", "--set", "eval_interval=10",
          "--set", "eval_iters=2")
    worker = start_worker("term", sqlite_url, log=tmp_path / "w.log")
    victim = wait_for(lambda: _running_with_metrics(sqlite_url, "term"), timeout=120, what="a running trial")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, (tmp_path / "w.log").read_text()
    log = (tmp_path / "w.log").read_text()
    assert "SIGTERM" in log and "enqueued again" in log
    trials = trials_of(sqlite_url, "term")
    stopped = trials[victim.number]
    assert stopped.state == TrialState.FAIL and stopped.user_attrs["interrupted"] is True
    assert stopped.user_attrs["steps"] < 5000 and stopped.user_attrs["final_val_loss"] is not None
    again = [t for t in trials if t.system_attrs.get("failed_trial") == victim.number]
    assert len(again) == 1 and again[0].state == TrialState.WAITING and again[0].params == victim.params
    assert not [t for t in trials if t.state == TrialState.RUNNING]


@pytest.mark.slow
@pytest.mark.postgres
def test_workers_ride_out_a_postgres_restart(postgres, pg_url, tmp_path, capsys):
    _grid(capsys, pg_url, "restart", "1,2", 3, *SLOW)
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [start_worker("restart", pg_url, log=log) for log in logs]
    def mid_grid() -> bool:  # one read a look: a loaded machine takes seconds for each
        trials = trials_of(pg_url, "restart")
        return (any(t.state == TrialState.COMPLETE for t in trials)
                and any(t.state == TrialState.RUNNING and len(t.intermediate_values) >= 2 for t in trials))

    # two workers starting torch beside other tests: minutes on a loaded 2-core machine
    wait_for(mid_grid, timeout=300, what="workers in the middle of the grid")
    postgres.restart(down_for=3)  # the session's server: it comes back, as the other tests expect
    codes = wait_all(workers, timeout=180)
    texts = [log.read_text() for log in logs]
    assert codes == [0, 0], texts
    assert any("unreachable" in t and "back after" in t for t in texts), texts
    trials = trials_of(pg_url, "restart")
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    cells = Counter((t.params["p"], t.params["fold"]) for t in complete)
    assert len(cells) == 6 and set(cells.values()) == {1}, Counter(t.state.name for t in trials)
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    steps = metrics_steps(pg_url, "restart")
    assert all(steps[t._trial_id] == list(range(0, 151, 10)) for t in complete)


def test_a_storage_that_stays_down_fails_with_one_line_after_the_retry_budget(monkeypatch):
    url = "postgresql+psycopg://writer:s3cret@db.example:5432/lp"
    clock = {"now": 1000.0}  # a clock that moves only when the policy waits: no wall-clock in the test
    waits: list[float] = []
    calls: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        clock["now"] += seconds

    monkeypatch.setattr(time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(time, "sleep", wait)

    def down():
        calls.append(clock["now"])
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("connection to server refused (s3cret)"))

    policy = RetryPolicy(url, budget_s=0.6, first_wait_s=0.05)
    with pytest.raises(StorageUnavailable) as caught:
        policy.call(down)
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and "\n" not in message
    assert "s3cret" not in message and "writer:***@db.example" in message and "stayed unreachable" in message
    # backoff: each wait twice the last, from first_wait_s; the last one cut so the waits fill the budget
    assert waits[:3] == pytest.approx([0.05, 0.1, 0.2]) and waits[-1] <= 2 * waits[-2]
    assert sum(waits) == pytest.approx(0.6) and len(calls) == len(waits) + 1
    assert calls[-1] - calls[0] == pytest.approx(0.6)  # the last try at the end of the budget, then the error
    # a mistake in the data is not a lost connection: not retried
    assert not is_transient(sa.exc.IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert math.isclose(RetryPolicy(url, budget_s=5).call(lambda: 1.5), 1.5)
