"""Many workers on one database, started at the same moment as the study's creator, a fifth of them
SIGKILLed in the middle of a trial, CPU load beside them: every cell runs exactly once, no worker
meets a trial another finished, every orphan is failed and retried, every worker starts. The small
version of benchmarks/bench_load.py (its harness, run_load: lpstudy's real worker loop with a
stand-in for training), on SQLite, PostgreSQL and through the storage proxy; and the two races of
starting beside a creator, each shown on its own."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter

import optuna
import pytest
import sqlalchemy as sa
from optuna.trial import TrialState

from benchmarks.bench_load import LoadPlan, run_load
from lpstudy.db.optuna_storage import open_storage
from lpstudy.errors import StudyUnavailable
from lpstudy.design.spec import replicate_spec
from lpstudy.study.studies import create_study, creating_storage, enqueue_missing_cells
from lpstudy.study.trial_context import TrialOutcome
from lpstudy.study.worker import WorkerOptions, run_worker

pytestmark = [pytest.mark.stress, pytest.mark.slow]

WORKERS = 20
P_VALUES, FOLDS = 10, 12  # 120 cells


def busy_loops(n: int) -> list[subprocess.Popen]:
    """CPU load beside the workers, as on a shared machine."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run_loaded(plan: LoadPlan, tmp_path, postgres=None):
    load = busy_loops(1)
    try:
        return run_load(plan, tmp_path / plan.storage, postgres)
    finally:
        for proc in load:
            proc.kill()
            proc.wait()


def assert_exactly_once(result, plan: LoadPlan) -> None:
    """What a team relies on, each count exact (see benchmarks/bench_load.py for their meaning)."""
    problems = result.start_errors + result.worker_errors + result.finished_trial_messages
    assert not problems, problems[:5]
    assert result.workers_started == plan.workers
    assert (result.cells_once, result.cells_missing, result.cells_more_than_once) == (plan.cells, 0, 0)
    assert result.finished_trial_errors == 0 and result.duplicate_numbers == 0
    kills = round(plan.workers * plan.kill_fraction)
    assert result.killed == kills
    assert result.orphans_failed == kills and result.orphans_retried == kills
    assert result.failed_not_killed == []
    # every trial is a cell's one COMPLETE trial or a killed worker's FAIL; nothing left waiting or running
    assert result.states == {"COMPLETE": plan.cells, "FAIL": kills}
    assert result.torch_in_workers == 0


def plan_for(storage: str) -> LoadPlan:
    # Heartbeats every 2 s, a grace period of 10 s; on SQLite every 5 s and 30 s: with 20 workers on
    # one file on two busy cores, a live trial's heartbeat waited over 10 s for the file's write lock
    # (writers queue on it, unfairly), and another worker failed the trial as stale.
    beat, grace = (5, 30) if storage == "sqlite" else (2, 10)
    return LoadPlan(storage=storage, workers=WORKERS, p_values=P_VALUES, folds=FOLDS, trial_s=0.2,
                    heartbeat_interval=beat, grace_period=grace, timeout_s=500)


def test_twenty_workers_on_sqlite_run_each_cell_once_and_retry_every_killed_workers_trial(tmp_path):
    plan = plan_for("sqlite")
    assert_exactly_once(run_loaded(plan, tmp_path), plan)


@pytest.mark.postgres
def test_twenty_workers_on_postgres_run_each_cell_once_and_retry_every_killed_workers_trial(tmp_path, postgres):
    plan = plan_for("postgresql")
    result = run_loaded(plan, tmp_path, postgres)
    assert_exactly_once(result, plan)
    # a worker holds two connections (its main thread's and its heartbeat thread's); the creator at
    # most three (its lock, its storage's two) and the harness's count one
    assert WORKERS < result.peak_connections <= 2 * WORKERS + 4


@pytest.mark.postgres
def test_twenty_workers_through_the_storage_proxy_run_each_cell_once_and_retry_every_killed_workers_trial(
        tmp_path, postgres):
    plan = plan_for("proxy")
    result = run_loaded(plan, tmp_path, postgres)
    assert_exactly_once(result, plan)
    # the workers hold no database connection: the proxy's pool is all there is
    assert 0 < result.peak_connections < WORKERS


@pytest.mark.postgres
def test_twenty_workers_as_threads_of_five_processes_run_each_cell_once_and_retry_every_killed_process_trials(
        tmp_path, postgres):
    """What the full-size run does where 200 processes do not fit two cores: each thread a full
    worker (its own storage, connections and heartbeat); a killed process leaves one orphan per
    worker of it that was in a trial, and each is failed and retried."""
    plan = LoadPlan(storage="postgresql", workers=WORKERS, p_values=P_VALUES, folds=FOLDS, trial_s=0.2,
                    heartbeat_interval=2, grace_period=10, timeout_s=500, threads_per_process=4)
    result = run_loaded(plan, tmp_path, postgres)
    problems = result.start_errors + result.worker_errors + result.finished_trial_messages
    assert not problems, problems[:5]
    assert result.workers_started == WORKERS and result.processes == 5 and result.processes_killed == 1
    assert 1 <= result.killed <= 4  # the killed process's workers that held a trial
    assert (result.cells_once, result.cells_missing, result.cells_more_than_once) == (plan.cells, 0, 0)
    assert result.finished_trial_errors == 0 and result.duplicate_numbers == 0
    assert result.orphans_failed == result.killed == result.orphans_retried and result.failed_not_killed == []
    assert result.states == {"COMPLETE": plan.cells, "FAIL": result.killed}
    assert WORKERS < result.peak_connections <= 2 * WORKERS + 4  # two per worker thread, as per process


def test_a_worker_fails_the_trial_whose_heartbeat_is_older_than_the_grace_period_and_no_other(empty_url):
    """The worker's stale check runs Optuna's (which loads every RUNNING trial) only when one count
    finds a heartbeat older than the grace period: a trial 40 s without a heartbeat (grace 30 s) is
    failed and enqueued again; one 20 s without stays RUNNING, and nothing is failed then."""
    from lpstudy.study.claims import pop_waiting_trial
    from lpstudy.study.replicate import replicate
    from lpstudy.study.studies import load_study

    replicate(creating_storage(empty_url), "beats", "smoke", [1.0, 2.0], 2, options={"max_retry": 3})  # four cells
    storage = open_storage(empty_url)
    study, _ = load_study(storage, "beats")
    study = storage.for_grid_worker(study)
    liveness = storage.liveness(1, 30, 3)
    old, recent = pop_waiting_trial(study, storage), pop_waiting_trial(study, storage)
    for trial in (old, recent):
        optuna.storages.RDBStorage.record_heartbeat(storage.optuna, trial._trial_id)
    beats = sa.Table("trial_heartbeats", sa.MetaData(), sa.Column("trial_id", sa.Integer), sa.Column("heartbeat", sa.DateTime))

    def set_back(trial, seconds: int) -> None:
        with storage.engine.begin() as conn:
            when = conn.execute(sa.select(beats.c.heartbeat).where(beats.c.trial_id == trial._trial_id)).scalar_one()
            conn.execute(beats.update().where(beats.c.trial_id == trial._trial_id)
                         .values(heartbeat=when - __import__("datetime").timedelta(seconds=seconds)))

    def states() -> dict[int, str]:
        return {t.number: t.state.name for t in storage.optuna.get_all_trials(study._study_id)}

    waiting = {n: "WAITING" for n in range(4) if n not in (old.number, recent.number)}  # claims take any of the oldest
    set_back(recent, 20)
    liveness.fail_stale(study)
    assert states() == {old.number: "RUNNING", recent.number: "RUNNING", **waiting}
    set_back(old, 40)
    liveness.fail_stale(study)
    assert states() == {old.number: "FAIL", recent.number: "RUNNING", **waiting, 4: "WAITING"}
    trials = storage.optuna.get_all_trials(study._study_id)
    assert trials[4].system_attrs["fixed_params"] == trials[old.number].system_attrs["fixed_params"]
    storage.engine.dispose()


# --- the races of starting beside a creator, one at a time ----------------------------------------

def test_a_worker_that_opens_a_database_its_creator_is_still_making_waits_and_writes_nothing(empty_url):
    """The creator makes Optuna's tables, then the version row, then alembic's stamp. Optuna's
    RDBStorage, opened by a worker in between, wrote the row and the stamp itself; two workers at
    once collided (duplicate key "pg_type_typname_nsp_index": both created alembic_version), and
    200 workers started beside a creator lost some of their number that way. A worker now finds
    "no studies yet" (what it waits on) and leaves the schema to the creator."""
    from optuna.storages._rdb import models  # the creator's first step, made by hand

    engine = sa.create_engine(empty_url)
    models.BaseModel.metadata.create_all(engine)
    with pytest.raises(StudyUnavailable, match="holds no studies yet"):
        open_storage(empty_url)
    tables = set(sa.inspect(engine).get_table_names())
    assert "studies" in tables and "alembic_version" not in tables  # the worker wrote no stamp
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM version_info")).scalar_one() == 0  # nor the row
    engine.dispose()
    # the creator then finishes, and the worker opens the database
    open_storage(empty_url, create_tables=True).engine.dispose()
    open_storage(empty_url).engine.dispose()


def complete_it(ctx, trial) -> TrialOutcome:
    ctx.spec.space.suggest(trial)
    return TrialOutcome(TrialState.COMPLETE, 1.0)


def test_a_cell_whose_worker_died_before_its_first_heartbeat_runs_again(empty_url):
    """A worker killed between its claim and its first heartbeat left a RUNNING trial that has no
    heartbeat at all; Optuna's stale check skips such a trial, so the cell stayed RUNNING for ever
    and every other worker waited for it. Now a worker that sees it so for a grace period gives it
    an old heartbeat, and Optuna's check fails it and enqueues the cell again."""
    from lpstudy.study.claims import pop_waiting_trial

    url = empty_url
    spec = replicate_spec("smoke", [1.0, 2.0], 2, options={"heartbeat_interval": 1, "grace_period": 2})
    storage = open_storage(url, create_tables=True)
    study, _ = create_study(storage, "unbeaten", spec)
    assert enqueue_missing_cells(study, spec, storage) == 4
    orphan = pop_waiting_trial(storage.for_grid_worker(study), storage)  # and its worker dies here
    reports = []
    worker = threading.Thread(target=lambda: reports.append(run_worker(
        WorkerOptions(study="unbeaten", storage=url, device="cpu", show_progress=False),
        say=lambda message: None, objective=complete_it, storage=storage)), daemon=True)  # a hung worker must not hang pytest
    worker.start()
    worker.join(timeout=300)  # a hang guard: before the fix it waited for the orphan for ever
    assert not worker.is_alive() and reports[0].reason == "no grid cell left", reports
    trials = optuna.load_study(study_name="unbeaten", storage=storage.optuna).get_trials(deepcopy=False)
    assert [t.state for t in trials if t.number == orphan.number] == [TrialState.FAIL]
    cells = Counter((t.params["p"], t.params["fold"]) for t in trials if t.state == TrialState.COMPLETE)
    assert cells == {(p, fold): 1 for p in (1.0, 2.0) for fold in (0, 1)}, cells
    assert Counter(t.state for t in trials) == {TrialState.COMPLETE: 4, TrialState.FAIL: 1}
    storage.engine.dispose()


def test_a_grid_worker_started_before_its_cells_are_enqueued_waits_for_them(sqlite_url):
    """A worker that starts between the study's creation and the enqueuing of its cells found
    nothing waiting and nothing running, and stopped ("no grid cell left") while the cells came."""
    spec = replicate_spec("smoke", [1.0, 2.0], 3, options={"heartbeat_interval": 1, "grace_period": 4})
    storage = open_storage(sqlite_url, create_tables=True)
    study, _ = create_study(storage, "early", spec)  # the study exists; no cell is enqueued yet
    reports = []
    worker = threading.Thread(target=lambda: reports.append(run_worker(
        WorkerOptions(study="early", storage=sqlite_url, device="cpu", show_progress=False),
        say=lambda message: None, objective=complete_it, storage=storage)))
    worker.start()
    worker.join(timeout=3)  # it has looked several times (GRID_POLL_S) and found nothing
    assert worker.is_alive() and not reports
    assert enqueue_missing_cells(study, spec, storage) == 6
    worker.join()
    assert reports[0].reason == "no grid cell left" and reports[0].trials == {"COMPLETE": 6}
    done = optuna.load_study(study_name="early", storage=storage.optuna).get_trials(deepcopy=False)
    assert Counter(t.state for t in done) == {TrialState.COMPLETE: 6}
    storage.engine.dispose()


def test_a_trial_failed_by_another_worker_in_the_middle_is_not_this_workers_failure(sqlite_url):
    """Under load a heartbeat can come later than the grace period: another worker then fails the
    live trial and enqueues its retry, and the first worker's next write to it raises
    UpdateFinishedTrialError. That is no failure of the first worker's: three in a row stopped it
    ("3 trials failed in a row"), each said "trial N failed: UpdateFinishedTrialError"."""
    from lpstudy.study.claims import requeue
    from lpstudy.study.replicate import replicate

    replicate(creating_storage(sqlite_url), "stolen", "smoke", [1.0, 2.0], 2, options={"max_retry": 5})  # 4 cells
    taken_over = []

    def failed_by_another_worker_three_times(ctx, trial) -> TrialOutcome:
        ctx.spec.space.suggest(trial)
        if len(taken_over) < 3:  # what another worker's stale check does to it
            taken_over.append(trial.number)
            ctx.storage.optuna.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)
            assert requeue(ctx.study, trial._trial_id, 5, storage=ctx.storage)
        trial.report(0.5, 1)  # raises for a trial another worker failed
        return TrialOutcome(TrialState.COMPLETE, 1.0)

    said: list[str] = []
    with open_storage(sqlite_url, wait=True) as storage:
        report = run_worker(WorkerOptions(study="stolen", storage=sqlite_url, device="cpu", show_progress=False),
                            say=said.append, objective=failed_by_another_worker_three_times, storage=storage)
    assert report.exit_code == 0 and report.reason == "no grid cell left", said
    assert sum("was already FAIL (failed by another worker after a missed heartbeat" in m for m in said) == 3
    assert not [m for m in said if "failed[/]" in m or "enqueued again" in m], said  # retried once, by the other
    storage = open_storage(sqlite_url)
    trials = optuna.load_study(study_name="stolen", storage=storage.optuna).get_trials(deepcopy=False)
    assert Counter(t.state for t in trials) == {TrialState.COMPLETE: 4, TrialState.FAIL: 3}
    assert sorted(t.number for t in trials if t.state == TrialState.FAIL) == sorted(taken_over)
    storage.engine.dispose()


def test_a_worker_waits_for_the_database_to_answer_and_other_commands_do_not(monkeypatch):
    """200 workers started at once on two cores timed out connecting to PostgreSQL (it forks a
    server process per connection) and stopped before their first trial; a worker now retries its
    open as it retries every storage call, and says for how long. Other commands still fail at once."""
    from lpstudy.db.optuna_storage import StorageUnavailable
    from tests.pgserver import free_port

    url = f"postgresql+psycopg://lpstudy@127.0.0.1:{free_port()}/nothing_listens"
    with pytest.raises(StudyUnavailable, match="cannot open the study database"):
        open_storage(url)
    monkeypatch.setenv("LPSTUDY_STORAGE_RETRY_S", "2")
    with pytest.raises(StorageUnavailable, match=r"stayed unreachable for \d+ s .*LPSTUDY_STORAGE_RETRY_S"):
        open_storage(url, wait=True)


@pytest.mark.alone  # two hundred processes on two cores: tests beside it that wait on time starved
def test_two_hundred_workers_through_the_default_overlays_proxy_fit_100_connections_and_ride_out_its_restart(tmp_path):
    """The gpu overlay's path (deploy/k8s/overlays/gpu: the workers behind the storage proxy) against
    a PostgreSQL limited to 100 connections, PostgreSQL's default: 200 worker processes finish the grid,
    each cell once, while the proxy is SIGKILLed and started again on its port (a rescheduled pod);
    the workers ride out the gap with their storage retry budget. Straight, 200 workers would need
    over 400 connections (docs/scale-workers.md)."""
    from tests.pgserver import ThrowawayPostgres

    # grace 120 s: above the longest a heartbeat waits behind 200 reconnecting workers on two cores
    # (docs/scale-workers.md); the harness's own deadline inside pytest's 600 s, so that it reports
    plan = LoadPlan(storage="proxy", workers=200, p_values=10, folds=60, trial_s=0.3, kill_fraction=0.0,
                    heartbeat_interval=10, grace_period=120, timeout_s=480, restart_proxy_at=0.4, proxy_down_s=10)
    postgres = ThrowawayPostgres(max_connections=100).start()
    try:
        result = run_loaded(plan, tmp_path, postgres)
    finally:
        postgres.cleanup()
    problems = result.start_errors + result.worker_errors + result.finished_trial_messages
    assert not problems, problems[:5]
    assert result.workers_started == 200 and result.processes == 200
    assert (result.cells_once, result.cells_missing, result.cells_more_than_once) == (plan.cells, 0, 0)
    assert result.duplicate_numbers == 0 and result.states == {"COMPLETE": plan.cells}
    assert result.proxy_restarts == 1 and result.proxy_down_s >= plan.proxy_down_s
    assert result.complete_at_proxy_kill < plan.cells  # the kill came mid-grid, and the grid finished after it
    assert 0 < result.peak_connections < 100 - 3  # superuser_reserved_connections: 3
