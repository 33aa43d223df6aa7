"""Every grid cell once: concurrent `create`/`replicate` enqueue each cell once and the later one
finds the study; a failure never enqueues a cell twice; an interruption does not use up max_retry;
status counts a cell once in a database that already holds duplicates, and says so."""

from __future__ import annotations

import threading
import warnings
from collections import Counter

import optuna
import pytest
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import open_storage
from lpstudy.db.retries import RetryCallback
from lpstudy.study.replicate import replicate
from lpstudy.study.studies import creating_storage
from lpstudy.study.studies import load_study
from lpstudy.study.worker import requeue
from tests.study_helpers import lp_env
from lpstudy.db.kinds import open_reader

warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
optuna.logging.set_verbosity(optuna.logging.WARNING)

P = [1.0, 2.0, 3.0]
FOLDS = 2  # 6 cells


def race_replicates(url: str, study: str, n: int = 3) -> list:
    """n replicate calls of one study released at the same instant (a barrier), each with its own
    storage connection as separate commands would have."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def one(i: int) -> None:
        barrier.wait()
        try:
            results[i] = replicate(creating_storage(url), study, "smoke", P, FOLDS)
        except Exception as exc:  # reported below, with the message a user would see
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return results


def check_race(url: str, rounds: int = 4) -> None:
    for r in range(rounds):
        results = race_replicates(url, f"race{r}")
        assert sorted(res.created for res in results) == [False, False, True]
        assert sorted(res.enqueued for res in results) == [0, 0, 6]
        study, spec = load_study(open_storage(url), f"race{r}")
        trials = study.get_trials(deepcopy=False)
        assert len(trials) == 6 and {t.state for t in trials} == {TrialState.WAITING}
        cells = Counter(spec.space.cell_of(t.system_attrs["fixed_params"]) for t in trials)
        assert set(cells.values()) == {1}


@pytest.mark.slow
def test_concurrent_replicates_on_sqlite_enqueue_each_cell_once(tmp_path):
    check_race(f"sqlite:///{tmp_path / 'race.db'}")  # the first round also races to create the tables


def test_concurrent_replicates_on_a_journal_enqueue_each_cell_once(tmp_path):
    check_race(f"journal:///{tmp_path / 'race.log'}", rounds=2)


@pytest.mark.slow
@pytest.mark.postgres
def test_concurrent_replicates_on_postgres_enqueue_each_cell_once(pg_url):
    check_race(pg_url)


@pytest.mark.slow
def test_two_creates_at_once_one_creates_the_other_finds_it(tmp_path):
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'new' / 'c.db'}"
    cmd = [sys.executable, "-m", "lpstudy", "create", "--study", "s", "--storage", url, "--preset", "smoke"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=lp_env())
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    errs = sorted(err for _, err in outs)
    assert sum("created in" in e for e in errs) == 1 and sum("exists already" in e for e in errs) == 1, errs
    assert not any("not created by lpstudy" in e or "Traceback" in e for e in errs), errs


def _grid(tmp_path):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    replicate(creating_storage(url), "g", "smoke", P, FOLDS)
    storage = open_storage(url)
    study, spec = load_study(storage, "g")
    _OPENED[id(study)] = storage
    return study, spec


def _storage_of(study: optuna.Study):
    """The lpstudy storage over the study's Optuna storage (_grid's)."""
    return _OPENED[id(study)]


_OPENED: dict = {}


def _run_and_fail(study) -> optuna.trial.FrozenTrial:
    """Take the newest waiting trial (the last retry) as a worker would and end it FAIL."""
    newest = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))[-1]
    assert study._storage.set_trial_state_values(newest._trial_id, state=TrialState.RUNNING)
    trial = optuna.Trial(study, newest._trial_id)
    trial.set_user_attr("note", "kept")
    study.tell(trial, state=TrialState.FAIL)
    return study._storage.get_trial(trial._trial_id)


def test_an_interruption_does_not_use_up_max_retry_and_a_crash_does(tmp_path):
    study, spec = _grid(tmp_path)
    for _ in range(4):  # four interruptions of one cell with max_retry=1: each is retried
        failed = _run_and_fail(study)
        assert requeue(study, failed._trial_id, max_retry=1, interrupted=True, spec=spec, storage=_storage_of(study))
    failed = _run_and_fail(study)  # the first crash: retried (max_retry=1) ...
    assert requeue(study, failed._trial_id, max_retry=1, spec=spec, storage=_storage_of(study))
    retry = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))[-1]
    assert retry.user_attrs["note"] == "kept"  # a retry keeps the failed trial's user attributes
    assert retry.system_attrs["failed_trial"] == 5 and len(retry.system_attrs["retry_history"]) == 5
    failed = _run_and_fail(study)  # ... the second is not
    assert not requeue(study, failed._trial_id, max_retry=1, spec=spec, storage=_storage_of(study))
    # Optuna's stale-trial path uses the same rule
    assert not RetryCallback(1)(study, study._storage.get_trial(failed._trial_id))


def test_a_failed_cell_is_not_enqueued_when_it_has_a_live_trial(tmp_path):
    study, spec = _grid(tmp_path)
    failed = _run_and_fail(study)
    assert requeue(study, failed._trial_id, max_retry=3, spec=spec, storage=_storage_of(study))
    assert not requeue(study, failed._trial_id, max_retry=3, spec=spec, storage=_storage_of(study))  # its retry already waits
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    cells = Counter(spec.space.cell_of(t.system_attrs["fixed_params"]) for t in waiting)
    assert len(waiting) == 6 and set(cells.values()) == {1}


@pytest.mark.slow
def test_status_counts_a_grid_cell_once_and_says_so(tmp_path, capsys):
    from lpstudy.results.status import render_status, study_status
    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{tmp_path / 'd.db'}"
    write_synthetic_study(url, "grid", kind="replicate", p_values=[1.0, 2.0, 3.0], folds=3, seed=1,
                          n_evals=4, states=False)
    before = study_status(open_reader(url), "grid")
    study, _ = load_study(open_storage(url), "grid")
    first = [t for t in study.get_trials() if t.state == TrialState.COMPLETE][0]
    for _ in range(2):  # the same cell completed twice more, as a racing database held them
        study.add_trial(optuna.trial.create_trial(
            state=TrialState.COMPLETE, value=first.value - 0.5, params=first.params,
            distributions=first.distributions, user_attrs=first.user_attrs))
    after = study_status(open_reader(url), "grid")
    assert after["grid"]["done"] == before["grid"]["done"] == 9
    assert after["per_p"] == before["per_p"] and after["verdicts"] == before["verdicts"]
    assert after["best"] == before["best"]
    assert after["duplicates"] == [9, 10] and before["duplicates"] == []
    render_status(after)
    out = capsys.readouterr().out
    assert "2 duplicate run(s) of a grid cell left out (trial 9, 10)" in out


def test_a_bulk_enqueue_run_again_after_its_commit_adds_no_cell_twice(tmp_path):
    """The cells go in one transaction, retried on an outage; when the commit landed but its reply was
    lost, the retry runs the enqueue again, and it must look the cells up again, not insert them again."""
    from lpstudy.design.spec import replicate_spec
    from lpstudy.study.studies import create_study, enqueue_missing_cells

    class ReplyLostOnce:  # the retry policy seen from the caller: it ran fn, committed, and runs fn again
        runs = 0

        def call(self, fn, *args, **kwargs):
            self.runs += 1
            fn(*args, **kwargs)
            self.runs += 1
            return fn(*args, **kwargs)

    storage = open_storage(f"sqlite:///{tmp_path / 'lost.db'}", create_tables=True)
    spec = replicate_spec("smoke", [1.0, 2.0, 3.0], 2)
    study, _ = create_study(storage, "lost", spec)
    storage.retry = policy = ReplyLostOnce()
    assert enqueue_missing_cells(study, spec, storage) == 0  # the second run found all six enqueued
    assert policy.runs == 2
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == 6 and all(t.state == TrialState.WAITING for t in trials)
    assert sorted((t.system_attrs["fixed_params"]["p"], t.system_attrs["fixed_params"]["fold"]) for t in trials) == [
        (p, f) for p in (1.0, 2.0, 3.0) for f in (0, 1)]
    storage.engine.dispose()


def _live_cell_and_its_failure(tmp_path):
    """A grid whose first cell failed and was retried (its retry waits): the cell is live."""
    study, spec = _grid(tmp_path)
    failed = _run_and_fail(study)
    assert requeue(study, failed._trial_id, max_retry=3, spec=spec, storage=_storage_of(study))
    return study, spec, failed


def _waiting_in_cell(study, spec, trial) -> int:
    key = spec.space.cell_of(trial.system_attrs["fixed_params"])
    return sum(spec.space.cell_of(t.system_attrs["fixed_params"]) == key
               for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))


def test_an_error_while_looking_at_a_cell_is_raised_and_the_cell_is_not_enqueued_twice(tmp_path, monkeypatch):
    """A failure to read a cell's other trials is not "the cell has no live trial": before, any
    exception there meant not live, and the cell got a second waiting trial."""
    from lpstudy.study import claims

    study, spec, failed = _live_cell_and_its_failure(tmp_path)
    retry_id = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))[-1]._trial_id
    real = claims.trial_params

    def flaky(trial):
        if trial._trial_id == retry_id:  # the cell's live trial cannot be read
            raise RuntimeError("lost the connection in the middle of a read")
        return real(trial)

    monkeypatch.setattr(claims, "trial_params", flaky)
    with pytest.raises(RuntimeError, match="lost the connection"):
        requeue(study, failed._trial_id, max_retry=3, spec=spec, storage=_storage_of(study))
    assert _waiting_in_cell(study, spec, failed) == 1


def test_a_transient_error_while_looking_at_a_cell_is_retried_through_the_storage(tmp_path, monkeypatch):
    """Given the storage, a transient database error during the look is retried (the storage's
    retry policy), and the answer is the right one: the cell is live, nothing is enqueued."""
    import sqlalchemy as sa

    from lpstudy.study import claims

    study, spec, failed = _live_cell_and_its_failure(tmp_path)
    storage = open_storage(f"sqlite:///{tmp_path / 'g.db'}", retry_s=30)
    storage.retry.first_wait_s = 0.01
    retry_id = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))[-1]._trial_id
    real = claims.trial_params
    calls = [0]

    def flaky(trial):
        if trial._trial_id == retry_id:
            calls[0] += 1
            if calls[0] == 1:  # the cell's live trial, on the first look only
                raise sa.exc.OperationalError("SELECT", {}, Exception("server closed the connection unexpectedly"))
        return real(trial)

    monkeypatch.setattr(claims, "trial_params", flaky)
    assert not requeue(study, failed._trial_id, max_retry=3, spec=spec, storage=storage)
    assert calls[0] == 2  # looked again after the error
    assert _waiting_in_cell(study, spec, failed) == 1
