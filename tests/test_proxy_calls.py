"""lpstudy's own calls on its storage proxy (lpstudy.db.proxy_calls): through `lpstudy storage-proxy`
a grid worker claims a cell, counts trials and checks the leases with one call each, and never
reads the study's trials through Optuna's gRPC client (which fetches every unfinished trial, a
grid's waiting cells included, on each read); the answers are the ones Optuna's reads give; many
workers claiming at once take each cell once; and through a proxy without these calls (Optuna's
own) a worker reads as before."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter

import optuna
import pytest
from optuna.storages._grpc import client as grpc_client
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import open_storage
from lpstudy.db.kinds import storage_at
from lpstudy.db.optuna_storage import make_proxy_server
from lpstudy.study.claims import pop_waiting_trial
from lpstudy.db.liveness import running_beats
from lpstudy.values import LEASE_ATTR
from lpstudy.study.replicate import replicate
from lpstudy.study.studies import creating_storage
from lpstudy.study.studies import load_study
from tests.pgserver import free_port

STUDY = "calls"


@pytest.fixture
def grid(sqlite_url):
    """A grid of 4 p values x 10 folds, 40 cells waiting, on the database behind the proxy."""
    replicate(creating_storage(sqlite_url), STUDY, "smoke", [1.0, 2.0, 3.0, 4.0], 10, options={"max_retry": 3})
    return sqlite_url


@pytest.fixture
def lpstudy_proxy(grid):
    port = free_port()
    server = make_proxy_server(storage_at(grid), "127.0.0.1", port, threads=8)
    server.start()
    yield f"grpc://127.0.0.1:{port}"
    server.stop(0).wait()


@pytest.fixture
def optuna_proxy(grid):
    """Optuna's own proxy in front of the same database: no lpstudy calls on it."""
    from optuna.storages import get_storage
    from optuna.storages._grpc.server import make_server

    port = free_port()
    server = make_server(get_storage(open_storage(grid).optuna), "127.0.0.1", port)
    server.start()
    yield f"grpc://127.0.0.1:{port}"
    server.stop(0).wait()


@pytest.fixture
def trial_reads(monkeypatch) -> Counter:
    """How many times Optuna's gRPC client read the study's trials (each read fetches every
    unfinished trial)."""
    reads: Counter = Counter()
    read = grpc_client.GrpcClientCache._read_trials_from_remote_storage

    def counted(self, study_id):
        reads["trials"] += 1
        return read(self, study_id)

    monkeypatch.setattr(grpc_client.GrpcClientCache, "_read_trials_from_remote_storage", counted)
    return reads


def worker_study(url: str):
    storage = open_storage(url)
    study, _ = load_study(storage, STUDY)
    return storage, study


def true_counts(url: str) -> dict[str, int]:
    """The trials' states as Optuna reads them straight from the database."""
    return dict(Counter(t.state.name for t in optuna.load_study(study_name=STUDY, storage=url).get_trials()))


def test_a_worker_claims_counts_and_checks_leases_through_lpstudys_proxy_without_reading_the_trials(
        lpstudy_proxy, grid, trial_reads):
    storage, study = worker_study(lpstudy_proxy)
    trial_reads.clear()  # loading the study reads it once; what follows is the per-trial work

    claimed = [pop_waiting_trial(study, storage) for _ in range(3)]
    assert len({t.number for t in claimed}) == 3 and {t.number for t in claimed} <= set(range(40))
    # the claimed trials are RUNNING in the database, and take parameters as Optuna's trials do
    assert true_counts(grid) == {"RUNNING": 3, "WAITING": 37}
    assert claimed[0].suggest_float("p", 1.0, 4.0) in (1.0, 2.0, 3.0, 4.0)

    assert storage.count_trials(study, (TrialState.RUNNING,)) == 3
    assert storage.count_trials(study, (TrialState.WAITING,)) == 37
    assert storage.count_trials(study, tuple(TrialState)) == 40

    before = time.time()
    storage.optuna.set_trial_system_attr(claimed[1]._trial_id, LEASE_ATTR, before - 100)  # a dead worker's
    storage.optuna.set_trial_system_attr(claimed[2]._trial_id, LEASE_ATTR, before)  # a live one's
    beats = {number: last for _, number, last in running_beats(study, storage.proxy_calls)}
    assert set(beats) == {t.number for t in claimed}
    assert beats[claimed[1].number] == pytest.approx(before - 100)
    assert beats[claimed[2].number] == pytest.approx(before)
    # without a beat, a trial's start counts as its first (as lpstudy.db.liveness.last_beat reads it)
    assert before - 60 < beats[claimed[0].number] <= before + 1
    assert trial_reads["trials"] == 0, "a claim, a count or a lease check read the trials through Optuna"

    said = storage.liveness(10, 60, 3).fail_stale(study)
    assert said == [f"trial {claimed[1].number} lost its worker (no heartbeat for 60 s): failed, and enqueued again"]
    assert true_counts(grid) == {"RUNNING": 2, "WAITING": 38, "FAIL": 1}  # the dead one's cell enqueued again
    assert storage.proxy_calls.offered


def test_the_answers_through_lpstudys_proxy_are_optunas(lpstudy_proxy, grid):
    storage, study = worker_study(lpstudy_proxy)
    for _ in range(5):
        trial = pop_waiting_trial(study, storage)
    study.tell(trial, 1.0)
    study.tell(pop_waiting_trial(study, storage), state=TrialState.FAIL)
    expected = true_counts(grid)
    assert expected == {"COMPLETE": 1, "FAIL": 1, "RUNNING": 4, "WAITING": 34}
    for state in TrialState:
        assert storage.count_trials(study, (state,)) == expected.get(state.name, 0), state
    running = sorted((t._trial_id, t.number) for t in study.get_trials(states=(TrialState.RUNNING,)))
    assert sorted((tid, number) for tid, number, _ in running_beats(study, storage.proxy_calls)) == running


@pytest.mark.slow
def test_workers_claiming_at_once_through_lpstudys_proxy_take_each_cell_once(lpstudy_proxy, grid):
    """Eight workers, each with its own storage and channel, claim until no cell waits, three
    rounds, with a busy loop beside them: every cell is claimed by exactly one."""
    load = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for round_ in range(3):
            if round_:  # the next round's cells: every RUNNING trial completes, the grid is enqueued again
                storage, study = worker_study(grid)
                for trial in study.get_trials(states=(TrialState.RUNNING,)):
                    study.tell(trial.number, 1.0)
                for _ in range(40):
                    study.enqueue_trial({"p": 1.0, "fold": 0}, skip_if_exists=False)
            taken: list[list[int]] = [[] for _ in range(8)]

            def claim_all(i: int) -> None:
                storage, study = worker_study(lpstudy_proxy)
                while (trial := pop_waiting_trial(study, storage)) is not None:
                    taken[i].append(trial._trial_id)

            threads = [threading.Thread(target=claim_all, args=(i,)) for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            claims = [tid for mine in taken for tid in mine]
            assert len(claims) == 40 and len(set(claims)) == 40, f"round {round_}: {Counter(claims).most_common(3)}"
            assert true_counts(grid).get("WAITING", 0) == 0
    finally:
        load.kill()


def test_through_optunas_own_proxy_a_worker_reads_the_trials_as_before(optuna_proxy, grid, trial_reads):
    storage, study = worker_study(optuna_proxy)
    first = pop_waiting_trial(study, storage)
    assert first.number == 0  # Optuna's pop: the oldest
    assert storage.proxy_calls.offered is False  # the proxy answered UNIMPLEMENTED once
    assert storage.count_trials(study, (TrialState.RUNNING,)) == 1
    assert [(tid, n) for tid, n, _ in running_beats(study, storage.proxy_calls)] == [(first._trial_id, 0)]
    assert trial_reads["trials"] >= 3  # each through Optuna's read of the trials
    assert true_counts(grid) == {"RUNNING": 1, "WAITING": 39}
