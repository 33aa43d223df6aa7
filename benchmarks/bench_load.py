"""Hundreds of workers on one database: lpstudy's real claims, heartbeats, retries and tells, with
a stand-in for training, SIGKILL for a fifth of the workers in the middle of a trial, and exact counts.

Each storage gets a fresh, empty database: (a) PostgreSQL straight (the tests' throwaway server,
tests/pgserver.py, `--max-connections`), (b) through one `lpstudy storage-proxy` in front of it, (c)
SQLite (fewer workers: one file on one machine); and for comparison, `optuna-proxy`: Optuna's own
run_grpc_proxy_server in front of PostgreSQL, without lpstudy's calls (lpstudy.db.proxy_calls).
The worker processes and the study's creator start at the same moment, as on a cluster: each worker
waits until the study exists (as the Kubernetes workers' init container does), then runs lpstudy's
worker loop (lpstudy.study.worker: claim, heartbeat or lease, stale-trial failing and retry, tell)
with a stand-in objective that sleeps `--trial-ms` and reports two intermediate values (no torch in
those processes). The creator is `replicate` of a p × folds grid (`--cells`). While the cells run,
`--kill-fraction` of the workers are SIGKILLed, each in the middle of a trial, spread over the run.

Reported per storage, from the database afterwards and the workers' own records:

    cells run exactly once         each cell has one COMPLETE trial (must be all)
    finished-trial errors          a worker told a trial another had failed, or wrote to it
                                   (UpdateFinishedTrialError; must be 0)
    duplicate trial numbers        (must be 0)
    orphans failed and retried     the killed workers' trials, failed and enqueued again (must be all);
                                   how long after the kill, against the grace period
    workers started                started without an error, creating tables included (must be all)
    peak connections               PostgreSQL's pg_stat_activity, sampled every 0.2 s
    claim p50/p99                  lpstudy.study.claims.pop_waiting_trial, as each worker timed it
    between trials p50/p99         from one trial's end to the next one's start: tell, stale check, claim
                                   (gaps in which the worker waited for a cell to come back left out)
    memory per worker              RSS, USS (its own pages) and PSS of the worker processes, read from
                                   /proc/PID/smaps_rollup when a third of the cells are done
    trials/s                       cells over the time from the first start to the last completion

    python benchmarks/bench_load.py                           # 200 workers, 5,000 cells, all three
    python benchmarks/bench_load.py --workers 200 --threads 4 --cells 5000 --heartbeat-interval 5 \
        --grace-period 30 --json                              # what a shared two-core machine ran
                                                              # (docs/scale-workers.md)

The worker processes are forked from a server process that has imported lpstudy once
(multiprocessing's forkserver), so 200 of them start in seconds and share most of their memory.
With --threads N each process runs N workers, each in a thread of its own with its own storage
(its own connections and heartbeat thread, or its own gRPC channel): where 200 processes do not fit
the cores (docs/scale-workers.md), 50 processes × 4 threads are still 200 workers to the database.
A fifth of the processes are SIGKILLed, each while every trial its workers hold is in its
objective (Board); each such trial is one orphan.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402
import lpstudy.study.sources as sources_module  # noqa: E402
from lpstudy.db.kinds import open_reader, storage_at  # noqa: E402
from lpstudy.db.optuna_storage import open_storage  # noqa: E402
from lpstudy.errors import UserError  # noqa: E402
from lpstudy.study.claims import pop_waiting_trial  # noqa: E402
from lpstudy.study.studies import creating_storage, load_spec  # noqa: E402
from lpstudy.study.trial_context import TrialContext, TrialOutcome  # noqa: E402
from lpstudy.values import SPEC_ATTR  # noqa: E402
from lpstudy.study.worker import Worker, WorkerOptions  # noqa: E402

# The drivers every worker loads when it opens its storage, loaded once in the forkserver: on a
# cluster each worker loads them on its own node; here 200 loading them at once took minutes of CPU.
import alembic.migration  # noqa: E402,F401
import alembic.script  # noqa: E402,F401
import grpc  # noqa: E402,F401
import psycopg  # noqa: E402,F401
import sqlalchemy.dialects.postgresql.psycopg  # noqa: E402,F401
import sqlalchemy.dialects.sqlite  # noqa: E402,F401

STUDY = "load"
# What a worker hears while the creator is still at work: the study is not there yet.
NOT_YET = ("holds no studies yet", "no study named", "was not created by lpstudy", "no study database at")
# What a worker says (or raises) when it met a trial that another worker had finished.
FINISHED_TRIAL_SIGNS = ("UpdateFinishedTrialError", "was already", "has already finished", "Cannot tell a")
STORAGES = ("postgresql", "proxy", "optuna-proxy", "sqlite")
PROXIES = ("proxy", "optuna-proxy")
# optuna-proxy: Optuna's own run_grpc_proxy_server in front of the database (what lpstudy's proxy was
# before its own calls, lpstudy.db.proxy_calls): the workers then claim, count and check leases
# through Optuna's reads of the trials.
OPTUNA_PROXY = """import sys
from concurrent.futures import ThreadPoolExecutor
from optuna.storages import get_storage, run_grpc_proxy_server
from lpstudy.db.optuna_storage import open_storage
url, port, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run_grpc_proxy_server(get_storage(open_storage(url, create_tables=True).optuna), host="127.0.0.1", port=port,
                      thread_pool=ThreadPoolExecutor(max_workers=threads))
"""


@dataclass
class LoadPlan:
    """One run: which storage, how many workers (processes × threads) and cells, how long a trial,
    how many processes to kill."""

    storage: str  # one of STORAGES
    workers: int  # worker threads in all: processes × threads_per_process
    p_values: int = 10
    folds: int = 500  # cells = p_values × folds
    trial_s: float = 0.3
    kill_fraction: float = 0.2
    heartbeat_interval: int = 2
    grace_period: int = 10
    max_retry: int = 3
    proxy_threads: int = 10  # `lpstudy storage-proxy --threads`
    timeout_s: float = 3600.0
    threads_per_process: int = 1  # each thread a full worker: its own storage, connections, heartbeat
    # Through a proxy: SIGKILL it when this share of the cells is complete, and start it again on the
    # same port proxy_down_s later (None: never).
    restart_proxy_at: float | None = None
    proxy_down_s: float = 10.0
    proxies: int = 1  # through a proxy: this many, the worker processes spread over them in turn (the first restarted)

    @property
    def cells(self) -> int:
        return self.p_values * self.folds

    @property
    def processes(self) -> int:
        return self.workers // self.threads_per_process

    @property
    def kills(self) -> int:
        """Processes SIGKILLed: a fifth of them, so a fifth of the workers."""
        return round(self.processes * self.kill_fraction)


# --- the worker processes ------------------------------------------------------------------------

KILL_BY = 0.6  # the kills fall between a tenth and this share of the cells completed
NEVER = 2**31 - 1  # Board.hold_from when no kill is still to make
KILL_WAIT_S = 120.0  # a kill that finds no process in the middle of its trials this long is given up (reported)


class Board:
    """What the harness sees of the workers: the trial each worker (slot) holds, from its claim to
    the end of its tell (-1: none), under one lock per process. A worker claims and tells under its
    process's lock, and the harness kills a process only while holding that lock, so the trials
    on the board of a killed process are exactly the RUNNING trials it leaves behind. It kills only
    a process whose every held trial is in its objective, past its first heartbeat: a trial killed
    between its claim and its first heartbeat has no heartbeat, and Optuna's stale check passes
    over such a trial (see docs/scale-workers.md), and only a process whose every worker has begun a
    trial (so that each of its workers is known to have started).

    The kill points are kept by the workers themselves, not by the harness's polls (on a fast storage
    the whole grid ends between two polls): each trial counts itself on the board when it is told,
    and once `completed` reaches `hold_from` (the next kill's share of the grid) no trial ends until
    the harness has made that kill and moved `hold_from` on. The workers in flight then wait in their
    objective: a victim for the kill, whenever it comes."""

    def __init__(self, ctx, processes: int, threads: int) -> None:
        self.threads = threads
        self.locks = [ctx.Lock() for _ in range(processes)]
        self.trials = ctx.Array("i", [-1] * (processes * threads), lock=False)
        self.started = ctx.Array("b", [0] * (processes * threads), lock=False)  # began a first trial
        # in the objective: the trial's first heartbeat is written (the worker beats before it runs)
        self.running = ctx.Array("b", [0] * (processes * threads), lock=False)
        self.completed = ctx.Value("i", 0)  # trials told COMPLETE, by every worker
        self.hold_from = ctx.Value("i", NEVER)  # no trial ends while completed >= this (a kill to make)

    def hold(self) -> None:
        """Wait (in the objective) while a kill is due and not yet made."""
        while self.completed.value >= self.hold_from.value:
            time.sleep(0.01)

    def slots(self, process: int) -> range:
        return range(process * self.threads, (process + 1) * self.threads)


class StandIn:
    """The objective of the load test: takes the cell's parameters as training does, then sleeps
    `trial_s` with two intermediate values reported on the way (storage writes), and completes."""

    def __init__(self, trial_s: float, record: dict, board: Board, slot: int) -> None:
        self.trial_s, self.record, self.board, self.slot = trial_s, record, board, slot

    def __call__(self, ctx: TrialContext, trial: optuna.Trial) -> TrialOutcome:
        self.board.running[self.slot] = 1
        started = time.monotonic()
        if self.record["last_end"] is None:
            self.record["first_trial_at"] = time.time()
        elif not self.record["idle"]:  # a gap with a wait for a cell to come back is no trial's cost
            self.record["gaps"].append(started - self.record["last_end"])
        self.record["idle"] = False
        params = ctx.spec.space.suggest(trial)
        value = abs(float(params["p"]) - 2.5) + 1e-3 * int(params["fold"])
        for step in (1, 2):
            time.sleep(self.trial_s / 2)
            trial.report(value + 0.1 / step, step)
        self.board.hold()
        self.record["trials"] += 1
        self.record["last_end"] = time.monotonic()
        return TrialOutcome(TrialState.COMPLETE, value)


_thread = threading.local()  # this thread's worker: slot, record


def _claim_on_the_board(board: Board, lock):
    """lpstudy's claim (which the worker loop calls), timed, with the claimed trial put on the board
    under the process's lock (see Board)."""
    def pop(study, storage):
        record, slot = _thread.record, _thread.slot
        with lock:
            t0 = time.monotonic()
            trial = pop_waiting_trial(study, storage)
            if trial is not None:
                board.trials[slot] = trial.number
                board.running[slot] = 0
                board.started[slot] = 1
        if trial is not None:  # a look that found no cell waiting is a poll, not a claim
            record["claims"].append(time.monotonic() - t0)
        record["idle"] = record["idle"] or trial is None  # none waits now: the worker polls
        return trial
    return pop


class LoadWorker(Worker):
    """lpstudy's worker, its tell taken off the board under the process's lock (see Board)."""

    def __init__(self, *args, board: Board, lock, slot: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.board, self.lock, self.slot = board, lock, slot

    def _tell(self, source, trial, outcome):
        with self.lock:
            told = super()._tell(source, trial, outcome)
            if outcome.state == TrialState.COMPLETE:
                with self.board.completed.get_lock():
                    self.board.completed.value += 1
            self.board.trials[self.slot] = -1
            self.board.running[self.slot] = 0
        return told


def _spec_stored(url: str) -> bool:
    """Whether the study's spec is in the storage at url, by its reader's list of studies (on SQL one
    plain SELECT on a connection of its own). On a cluster each worker looks from its own node; here
    200 opening Optuna's storage on each look (its schema check parses alembic's scripts) kept two
    cores busy and starved the creator."""
    try:
        with open_reader(url) as reader:
            return any(record.name == STUDY and SPEC_ATTR in record.attrs for record in reader.studies())
    except (UserError, sa.exc.SQLAlchemyError):
        return False  # no tables yet, or the server is busy: look again


def wait_for_study(url: str) -> None:
    """Until the study exists with its spec: what the Kubernetes workers' init container waits for."""
    while not _spec_stored(url):
        time.sleep(random.uniform(2.0, 5.0))
    while True:
        try:
            with open_storage(url, wait=True) as storage:  # as the worker opens it
                load_spec(storage, STUDY)
                return
        except UserError as exc:
            if not any(sign in str(exc) for sign in NOT_YET):
                raise
        time.sleep(random.uniform(2.0, 5.0))  # the init container looks every 5 s; each look opens the storage


def _worker_thread(slot: int, url: str, plan: LoadPlan, board: Board, lock, go, records: list) -> None:
    """One worker: wait for the go, then for the study, then run lpstudy's worker loop with the
    stand-in objective; what it saw goes into records."""
    record: dict[str, Any] = {"slot": slot, "pid": os.getpid(), "trials": 0, "claims": [], "gaps": [], "last_end": None, "idle": False,
              "first_trial_at": None, "finished_trial_errors": [], "said": [], "error": None, "reason": "",
              "exit_code": 0, "torch": None, "orphans_seen": 0}
    records.append(record)
    _thread.record, _thread.slot = record, slot

    def say(message: str) -> None:
        if any(sign in message for sign in FINISHED_TRIAL_SIGNS):
            record["finished_trial_errors"].append(message)
        elif "lost its worker" in message:
            record["orphans_seen"] += 1  # the lease's retry of a killed worker's trial (gRPC): expected
        elif "failed" in message or "error" in message.lower():
            record["said"].append(message)

    go.wait()
    try:
        wait_for_study(url)
        with open_storage(url, wait=True) as storage:  # as `lpstudy worker`: this worker's one storage
            report = LoadWorker(WorkerOptions(study=STUDY, storage=url, device="cpu", show_progress=False),
                                say=say, objective=StandIn(plan.trial_s, record, board, slot), board=board, lock=lock,
                                slot=slot, storage=storage).run()
        record["reason"], record["exit_code"] = report.reason, report.exit_code
    except BaseException as exc:  # reported by the harness, with the message a user would see
        record["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        record["exit_code"] = 1
    record.pop("last_end")
    record.pop("idle")


def worker_process(process: int, url: str, plan: LoadPlan, board: Board, go, out: str) -> None:
    """One worker process: plan.threads_per_process workers, each in a thread of its own with its
    own storage (connections, heartbeat thread); write what they saw to `out` (a killed process
    writes nothing)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as the command line does
    warnings.filterwarnings("ignore")
    lock = board.locks[process]
    sources_module.pop_waiting_trial = _claim_on_the_board(board, lock)  # lpstudy's claim, which a grid's cells call
    records: list[dict] = []
    threads = [threading.Thread(target=_worker_thread, args=(slot, url, plan, board, lock, go, records))
               for slot in board.slots(process)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for record in records:
        record["torch"] = "torch" in sys.modules
    Path(out).write_text(json.dumps(records))
    sys.exit(max(record["exit_code"] for record in records))


# --- the harness ---------------------------------------------------------------------------------

@dataclass
class Kill:
    """One trial left RUNNING by a SIGKILLed process (one per worker of it that held a trial)."""
    process: int
    slot: int
    pid: int
    trial: int
    at: float  # time.time()


@dataclass
class LoadResult:
    storage: str
    workers: int
    cells: int
    trial_ms: float
    processes: int = 0
    threads_per_process: int = 1
    processes_killed: int = 0
    wall_s: float = 0.0
    trials_per_s: float = 0.0
    workers_started: int = 0
    workers_without_trial: int = 0  # started, found the grid done, and stopped without a trial: no error
    start_errors: list[str] = field(default_factory=list)
    worker_errors: list[str] = field(default_factory=list)
    cells_once: int = 0
    cells_missing: int = 0
    cells_more_than_once: int = 0
    finished_trial_errors: int = 0
    finished_trial_messages: list[str] = field(default_factory=list)
    duplicate_numbers: int = 0
    states: dict[str, int] = field(default_factory=dict)
    killed: int = 0
    orphans_failed: int = 0
    orphans_retried: int = 0
    orphan_fail_after_kill_s: list[float] = field(default_factory=list)  # per orphan
    killed_at_s: list[float] = field(default_factory=list)  # each orphan's kill, seconds after the start
    orphans_not_failed: list[int] = field(default_factory=list)  # killed trials not FAIL at the end
    grace_period_s: int = 0
    heartbeat_interval_s: int = 0
    failed_not_killed: list[int] = field(default_factory=list)
    failed_not_killed_detail: list[str] = field(default_factory=list)  # each one's times and attributes
    peak_connections: int | None = None
    worker_rss_mib: float = 0.0  # medians over the worker processes (see the module)
    worker_uss_mib: float = 0.0
    workers_pss_gib: float = 0.0  # all worker processes together
    claim_p50_ms: float = 0.0
    claim_p99_ms: float = 0.0
    between_p50_ms: float = 0.0
    between_p99_ms: float = 0.0
    claims: int = 0
    torch_in_workers: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    proxies: int = 1
    proxy_restarts: int = 0
    proxy_down_s: float = 0.0  # from the kill until the restarted proxy listened again
    proxy_killed_at_s: float | None = None  # seconds after the start
    complete_at_proxy_kill: int = 0
    first_complete_after_restart_s: float | None = None  # from the proxy listening again to the next COMPLETE

    @property
    def ok(self) -> bool:
        return (not self.start_errors and not self.worker_errors and self.cells_once == self.cells
                and self.finished_trial_errors == 0 and self.duplicate_numbers == 0
                and self.orphans_failed == self.killed == self.orphans_retried and not self.failed_not_killed
                and self.orphans_late == 0 and self.torch_in_workers == 0)

    @property
    def orphans_late(self) -> int:
        """Orphans failed later than the grace period and one heartbeat interval after the kill (the
        trial's last beat was at most one interval before it)."""
        return sum(1 for s in self.orphan_fail_after_kill_s if s > self.grace_period_s + self.heartbeat_interval_s)


class ConnectionSampler(threading.Thread):
    """PostgreSQL's connections to one database every 0.2 s (tests.pgserver.ConnectionCounter,
    its own left out); the peak."""

    def __init__(self, postgres, database: str) -> None:
        super().__init__(daemon=True)
        self.counter = postgres.connection_counter(database)
        self.peak, self._done = 0, threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.2):
            self.peak = max(self.peak, self.counter.count())

    def stop(self) -> int:
        self._done.set()
        self.join(timeout=5)
        self.counter.close()
        return self.peak


class Proxy:
    """`lpstudy storage-proxy` in front of the database, as a user starts it; optuna_only: Optuna's
    own proxy server instead (OPTUNA_PROXY). kill() and start() again on the same port: what the
    workers see of a proxy pod that is evicted and rescheduled."""

    def __init__(self, database_url: str, log: Path, threads: int, optuna_only: bool = False) -> None:
        from tests.pgserver import free_port

        self.port = free_port()
        self.url = f"grpc://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = open(log, "w")
        self.command = ([sys.executable, "-c", OPTUNA_PROXY, database_url, str(self.port), str(threads)] if optuna_only else
                        [sys.executable, "-m", "lpstudy", "storage-proxy", "--storage", database_url, "--host", "127.0.0.1",
                         "--port", str(self.port), "--threads", str(threads)])
        self.start()

    def start(self) -> None:
        from tests.pgserver import wait_for_port

        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_for_port(self.port, f"the storage proxy (see {self.log_path})", 120,
                      exited=lambda: self.process.poll() is not None
                      and f"the storage proxy exited with {self.process.returncode}; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL: no goodbye to the workers, calls in flight lost (a lost node, an OOM kill)."""
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _count_complete(engine: sa.Engine) -> int:
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(
                "SELECT count(*) FROM trials t JOIN studies s ON s.study_id = t.study_id "
                "WHERE s.study_name = :n AND t.state = 'COMPLETE'"), {"n": STUDY}).scalar_one())
    except sa.exc.SQLAlchemyError:
        return 0  # the creator has not made the tables yet


def _study_rows(engine: sa.Engine) -> tuple[list[tuple], dict[int, dict]]:
    """(trial_id, number, state, datetime_complete) of every trial, and each trial's system attributes."""
    with engine.connect() as conn:
        sid = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"), {"n": STUDY}).scalar_one()
        trials = [(trial_id, number, state, _datetime(done)) for trial_id, number, state, done in conn.execute(sa.text(
            "SELECT trial_id, number, state, datetime_complete FROM trials WHERE study_id = :s"), {"s": sid})]
        attrs: dict[int, dict] = {}
        for trial_id, key, value in conn.execute(sa.text(
                "SELECT a.trial_id, a.key, a.value_json FROM trial_system_attributes a "
                "JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = :s"), {"s": sid}):
            attrs.setdefault(trial_id, {})[key] = json.loads(value)
    return trials, attrs


def _trial_starts(engine: sa.Engine) -> dict[int, datetime | None]:
    with engine.connect() as conn:
        return {tid: _datetime(start) for tid, start in conn.execute(sa.text(
            "SELECT t.trial_id, t.datetime_start FROM trials t JOIN studies s ON s.study_id = t.study_id "
            "WHERE s.study_name = :n"), {"n": STUDY})}


def _datetime(value) -> datetime | None:
    """A datetime column as read by a plain SELECT: a datetime (PostgreSQL) or its text (SQLite)."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _check_database(engine: sa.Engine, plan: LoadPlan, kills: list[Kill], result: LoadResult) -> float | None:
    """Fill in what the database says (see the module); the time of the last completion."""
    trials, attrs = _study_rows(engine)
    states = Counter(str(state).rsplit(".", 1)[-1] for _, _, state, _ in trials)
    result.states = dict(states)
    numbers = Counter(number for _, number, _, _ in trials)
    result.duplicate_numbers = sum(n - 1 for n in numbers.values() if n > 1)
    complete_cells = Counter(json.dumps(attrs.get(tid, {}).get("fixed_params"), sort_keys=True)
                             for tid, _, state, _ in trials if str(state).endswith("COMPLETE"))
    result.cells_once = sum(1 for n in complete_cells.values() if n == 1)
    result.cells_more_than_once = sum(1 for n in complete_cells.values() if n > 1)
    result.cells_missing = plan.cells - len(complete_cells)
    retried = {attrs[tid]["retry_history"][-1] for tid in attrs if attrs[tid].get("retry_history")}
    by_number = {number: (state, done) for _, number, state, done in trials}
    killed_numbers = {k.trial: k for k in kills}
    failed = [number for number, (state, _) in by_number.items() if str(state).endswith("FAIL")]
    result.failed_not_killed = sorted(n for n in failed if n not in killed_numbers)
    starts = _trial_starts(engine)
    by_id = {number: tid for tid, number, _, _ in trials}
    result.failed_not_killed_detail = [
        f"trial {n} FAIL, not killed: started {starts.get(by_id[n])}, failed {by_number[n][1]}, "
        f"system attributes {sorted(attrs.get(by_id[n], {}))}" for n in result.failed_not_killed]
    result.orphans_failed = sum(1 for n in killed_numbers if str(by_number.get(n, ("",))[0]).endswith("FAIL"))
    result.orphans_retried = sum(1 for n in killed_numbers if n in retried)
    result.orphans_not_failed = sorted(n for n in killed_numbers if not str(by_number.get(n, ("",))[0]).endswith("FAIL"))
    result.orphan_fail_after_kill_s = sorted(
        round(by_number[n][1].timestamp() - k.at, 2) for n, k in killed_numbers.items()
        if n in by_number and by_number[n][1] is not None and str(by_number[n][0]).endswith("FAIL"))
    completed = [done.timestamp() for _, _, state, done in trials if str(state).endswith("COMPLETE") and done]
    return max(completed, default=None)


@contextlib.contextmanager
def _main_left_out():
    """Start processes without re-running the parent's __main__ in each: multiprocessing re-imports
    the __main__ module's file in a child, and inside a test run that can be whatever script ran
    last (Streamlit's AppTest leaves the dashboard there: every worker then failed on importing
    it). Needed only where the workers' function is not in __main__ itself."""
    if __name__ == "__main__":
        yield
        return
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def run_load(plan: LoadPlan, workdir: Path, postgres=None, progress=None) -> LoadResult:
    """One run of the load test (see the module); postgres: a started tests.pgserver.ThrowawayPostgres
    for the postgresql and proxy storages. progress(done, total, note) is called about once a second."""
    from lpstudy.db.urls import redact
    from lpstudy.study.replicate import replicate

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    workdir.mkdir(parents=True, exist_ok=True)
    result = LoadResult(storage=plan.storage, workers=plan.workers, cells=plan.cells, trial_ms=plan.trial_s * 1000,
                        processes=plan.processes, threads_per_process=plan.threads_per_process,
                        grace_period_s=plan.grace_period, heartbeat_interval_s=plan.heartbeat_interval,
                        proxies=plan.proxies if plan.storage in PROXIES else 1)
    proxy = sampler = None
    others: list[Proxy] = []
    if plan.storage == "sqlite":
        database_url = f"sqlite:///{workdir / 'load.db'}"
    else:
        name = f"load_{plan.storage.replace('-', '_')}_{os.getpid()}_{int(time.time() * 1000) % 10**8}"
        database_url = postgres.create_database(name)
        sampler = ConnectionSampler(postgres, name)
        sampler.start()
    try:
        if plan.storage in PROXIES:
            # The proxy opens the empty database first and makes Optuna's tables; workers reach it only.
            proxy = Proxy(database_url, workdir / "proxy.log", threads=plan.proxy_threads,
                          optuna_only=plan.storage == "optuna-proxy")
            others = [Proxy(database_url, workdir / f"proxy-{i}.log", threads=plan.proxy_threads,
                            optuna_only=plan.storage == "optuna-proxy") for i in range(1, plan.proxies)]
        urls = [p.url for p in [proxy, *others]] if proxy else [database_url]
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        board, go = Board(ctx, plan.processes, plan.threads_per_process), ctx.Event()
        outs = [workdir / f"worker-{i}.json" for i in range(plan.processes)]
        procs = [ctx.Process(target=worker_process, args=(i, urls[i % len(urls)], plan, board, go, str(outs[i])), daemon=True)
                 for i in range(plan.processes)]
        with _main_left_out():
            for proc in procs:
                proc.start()
        # read-only: counting must not create the SQLite file before the creator does
        count_engine = sa.create_engine(storage_at(database_url).readonly_url(), poolclass=sa.pool.NullPool)
        kills: list[Kill] = []
        kill_at = sorted(round(random.uniform(0.1, KILL_BY) * plan.cells) for _ in range(plan.kills))
        creator_error: list[str] = []

        def create() -> None:
            try:  # the study's creator, at the same moment as the workers: Optuna's tables, the study, its cells
                replicate(creating_storage(database_url), STUDY, "smoke", [1.0 + 0.25 * i for i in range(plan.p_values)], plan.folds,
                          options={"heartbeat_interval": plan.heartbeat_interval, "grace_period": plan.grace_period,
                                   "max_retry": plan.max_retry, "checkpoint_interval": 0})
            except BaseException as exc:
                creator_error.append(f"{type(exc).__name__}: {exc}")

        start = time.time()
        go.set()
        creator = threading.Thread(target=create, daemon=True)
        creator.start()
        deadline = time.monotonic() + plan.timeout_s
        restart = _ProxyRestart(proxy, plan, result, start, count_engine)
        board.hold_from.value = kill_at[0] if kill_at else NEVER
        polled, due_since = 0.0, None
        while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
            if kill_at and board.completed.value >= kill_at[0]:  # the workers hold until it is made (Board)
                due_since = due_since or time.monotonic()
                victim = _kill_one(board, procs)
                if victim or time.monotonic() - due_since > KILL_WAIT_S:
                    kills += victim
                    kill_at.pop(0)
                    board.hold_from.value = kill_at[0] if kill_at else NEVER
                    due_since = None
            if time.monotonic() - polled < 0.5:
                time.sleep(0.02)
                continue
            polled = time.monotonic()
            done = _count_complete(count_engine)
            if not result.worker_rss_mib and done >= plan.cells / 3:
                _measure_memory(procs, result)
            if proxy is not None and plan.restart_proxy_at is not None:
                restart.step(done)
            if progress is not None:
                alive = sum(p.is_alive() for p in procs)
                progress(done, plan.cells, f"{alive} processes · {len({k.process for k in kills})} killed"
                         + (f" · peak {sampler.peak} connections" if sampler else ""))
        timed_out = any(p.is_alive() for p in procs)
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
        creator.join(timeout=600)
        result.wall_s = time.time() - start
        if timed_out:
            result.worker_errors.append(f"workers still running after {plan.timeout_s:g} s: killed")
        if creator_error:
            result.start_errors.append("creator: " + creator_error[0])
        result.killed = len(kills)
        result.killed_at_s = [round(k.at - start, 1) for k in kills]
        killed_processes = {k.process for k in kills}
        result.processes_killed = len(killed_processes)
        records = []
        for i, (proc, out) in enumerate(zip(procs, outs)):
            if i in killed_processes:
                continue
            if not out.exists():
                result.worker_errors.append(f"worker process {i} exited {proc.exitcode} without a report")
                continue
            records += json.loads(out.read_text())
        for rec in records:
            if rec["error"]:
                started = rec["first_trial_at"] is not None
                (result.worker_errors if started else result.start_errors).append(f"worker {rec['slot']}: {rec['error']}")
            result.finished_trial_messages += rec["finished_trial_errors"]
            result.worker_errors += [f"worker {rec['slot']}: {m}" for m in rec["said"]]
            result.torch_in_workers += bool(rec["torch"])
        result.reasons = dict(Counter(rec["reason"] for rec in records if rec["reason"]))
        result.workers_without_trial = sum(1 for rec in records if rec["first_trial_at"] is None and not rec["error"])
        result.finished_trial_errors = len(result.finished_trial_messages)
        # a killed process's workers started if they began a trial (the board says); a worker that
        # reported started unless it failed before its first trial
        result.workers_started = sum(1 for p in killed_processes for slot in board.slots(p) if board.started[slot]) + sum(
            1 for rec in records if rec["first_trial_at"] is not None or not rec["error"])
        claims = [c for rec in records for c in rec["claims"]]
        gaps = [g for rec in records for g in rec["gaps"]]
        result.claims = len(claims)
        result.claim_p50_ms, result.claim_p99_ms = (1000 * _percentile(claims, q) for q in (0.5, 0.99))
        result.between_p50_ms, result.between_p99_ms = (1000 * _percentile(gaps, q) for q in (0.5, 0.99))
        last = _check_database(count_engine, plan, kills, result)
        first = min((rec["first_trial_at"] for rec in records if rec["first_trial_at"]), default=start)
        if last:
            result.trials_per_s = result.states.get("COMPLETE", 0) / max(1e-9, last - first)
        count_engine.dispose()
    finally:
        for server in ([proxy] if proxy is not None else []) + others:
            server.stop()
        if sampler is not None:
            result.peak_connections = sampler.stop()
    if progress is not None:
        progress(result.cells_once, plan.cells, f"done in {result.wall_s:.0f} s at {redact(database_url)}")
    return result


class _ProxyRestart:
    """The proxy killed once, at plan.restart_proxy_at of the cells, and started again on its port
    plan.proxy_down_s later; what the workers did about it goes into the result."""

    def __init__(self, proxy, plan: LoadPlan, result: LoadResult, start: float, engine: sa.Engine) -> None:
        self.proxy, self.plan, self.result, self.start, self.engine = proxy, plan, result, start, engine
        self.killed_at: float | None = None
        self.back_at: float | None = None
        self.done_at_back = 0

    def step(self, done: int) -> None:
        result = self.result
        at = self.plan.restart_proxy_at  # None: no restart planned
        if self.killed_at is None and at is not None and done >= at * self.plan.cells:
            self.proxy.kill()
            self.killed_at = time.time()
            result.proxy_killed_at_s = round(self.killed_at - self.start, 1)
            result.complete_at_proxy_kill = done
        elif self.killed_at is not None and self.back_at is None and time.time() >= self.killed_at + self.plan.proxy_down_s:
            self.proxy.start()
            self.back_at = time.time()
            self.done_at_back = _count_complete(self.engine)
            result.proxy_restarts += 1
            result.proxy_down_s = round(self.back_at - self.killed_at, 1)
        elif self.back_at is not None and result.first_complete_after_restart_s is None and done > self.done_at_back:
            result.first_complete_after_restart_s = round(time.time() - self.back_at, 1)


def _measure_memory(procs, result: LoadResult) -> None:
    """The live workers' memory from /proc/PID/smaps_rollup (see the module)."""
    rss, uss, pss = [], [], []
    for proc in procs:
        try:
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines()[1:])
        except (OSError, ValueError):
            continue  # gone, or killed since
        kib = {k: int(v.split()[0]) for k, v in fields.items()}
        rss.append(kib["Rss"] / 1024)
        uss.append((kib["Private_Clean"] + kib["Private_Dirty"]) / 1024)
        pss.append(kib["Pss"] / 1024)
    if rss:
        result.worker_rss_mib, result.worker_uss_mib = statistics.median(rss), statistics.median(uss)
        result.workers_pss_gib = sum(pss) / 1024


def _kill_one(board: Board, procs) -> list[Kill]:
    """SIGKILL one worker process that is in the middle of a trial (see Board): the trials its
    workers held; none if no process holds one."""
    def in_trials(process: int) -> list[int] | None:
        """The slots holding a trial, if every worker of the process has begun one and every held
        trial is in its objective."""
        slots = board.slots(process)
        held = [slot for slot in slots if board.trials[slot] >= 0]
        ready = held and all(board.started[slot] for slot in slots) and all(board.running[slot] for slot in held)
        return held if ready else None

    busy = [p for p in range(len(procs)) if procs[p].is_alive() and in_trials(p)]
    random.shuffle(busy)
    for process in busy:
        with board.locks[process]:
            held = in_trials(process)
            if not held or not procs[process].is_alive():
                continue  # it told or claimed meanwhile
            at = time.time()
            os.kill(procs[process].pid, signal.SIGKILL)
            kills = [Kill(process, slot, procs[process].pid, board.trials[slot], at) for slot in held]
            for slot in held:
                board.trials[slot] = -1
        procs[process].join()
        return kills
    return []


# --- the command line ----------------------------------------------------------------------------

ROWS = [  # (label, how to show a result's figure)
    ("workers (processes × threads)", lambda r: f"{r.workers} ({r.processes} × {r.threads_per_process})"
     + (f", {r.proxies} proxies" if r.proxies > 1 else "")),
    ("cells (trial of)", lambda r: f"{r.cells:,} ({r.trial_ms:.0f} ms)"),
    ("workers started", lambda r: f"{r.workers_started}/{r.workers}" + (f" ({len(r.start_errors)} errors)" if r.start_errors else "")
     + (f", {r.workers_without_trial} ran none" if r.workers_without_trial else "")),
    ("cells run exactly once", lambda r: f"{r.cells_once:,}/{r.cells:,}"
     + (f" ({r.cells_missing} missing, {r.cells_more_than_once} twice)" if r.cells_once != r.cells else "")),
    ("finished-trial errors", lambda r: f"{r.finished_trial_errors}"),
    ("duplicate trial numbers", lambda r: f"{r.duplicate_numbers}"),
    ("killed mid-trial: processes, trials", lambda r: f"{r.processes_killed}, {r.killed}"),
    ("orphans failed, retried", lambda r: f"{r.orphans_failed}, {r.orphans_retried}"),
    ("orphan failed after kill", lambda r: (f"{min(r.orphan_fail_after_kill_s):.1f}-{max(r.orphan_fail_after_kill_s):.1f} s"
                                            if r.orphan_fail_after_kill_s else "-")
     + f" (grace {r.grace_period_s} s" + (f", {r.orphans_late} late)" if r.orphans_late else ")")),
    ("other failed trials", lambda r: f"{len(r.failed_not_killed)}"),
    ("peak connections", lambda r: "-" if r.peak_connections is None else f"{r.peak_connections}"),
    ("claim p50 / p99", lambda r: f"{r.claim_p50_ms:.0f} / {r.claim_p99_ms:.0f} ms"),
    ("between trials p50 / p99", lambda r: f"{r.between_p50_ms:.0f} / {r.between_p99_ms:.0f} ms"),
    ("trials/s", lambda r: f"{r.trials_per_s:.1f}"),
    ("worker RSS / USS", lambda r: f"{r.worker_rss_mib:.0f} / {r.worker_uss_mib:.0f} MiB"),
    ("all workers' PSS", lambda r: f"{r.workers_pss_gib:.2f} GiB"),
    ("proxy killed, down for", lambda r: "-" if not r.proxy_restarts else
     f"at {r.proxy_killed_at_s:.0f} s ({r.complete_at_proxy_kill:,} cells done), {r.proxy_down_s:.1f} s"),
    ("next COMPLETE after the restart", lambda r: "-" if r.first_complete_after_restart_s is None
     else f"{r.first_complete_after_restart_s:.1f} s"),
    ("wall", lambda r: f"{r.wall_s:.0f} s"),
    ("all as required", lambda r: "yes" if r.ok else "NO"),
]


def print_table(results: list[LoadResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="lpstudy under load: stand-in trials, real claims, heartbeats, retries and tells")
    table.add_column("")
    for r in results:
        table.add_column(r.storage, justify="right")
    for label, show in ROWS:
        table.add_row(label, *(show(r) for r in results))
    Console().print(table)
    for r in results:
        for line in (r.start_errors + r.worker_errors + r.finished_trial_messages + r.failed_not_killed_detail)[:10]:
            Console(stderr=True).print(f"[red]{r.storage}[/]: {line}", markup=True, highlight=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storages", default="postgresql,proxy,sqlite",
                        help=f"Comma-separated: {', '.join(STORAGES)} (Optuna's own proxy server, for comparison).")
    parser.add_argument("--workers", type=int, default=200, help="Workers on PostgreSQL and the proxy.")
    parser.add_argument("--threads", type=int, default=1,
                        help="Workers per process on PostgreSQL and the proxy, each a thread with its own storage "
                             "(--workers a multiple of it).")
    parser.add_argument("--sqlite-workers", type=int, default=30, help="Worker processes on SQLite (one thread each).")
    parser.add_argument("--cells", type=int, default=5000, help="Grid cells (10 p values × cells/10 folds).")
    parser.add_argument("--sqlite-cells", type=int, default=None, help="Grid cells on SQLite (default: --cells).")
    parser.add_argument("--trial-ms", type=float, default=300.0, help="Length of a stand-in trial.")
    parser.add_argument("--kill-fraction", type=float, default=0.2, help="Share of the workers SIGKILLed mid-trial.")
    parser.add_argument("--heartbeat-interval", type=int, default=2)
    parser.add_argument("--grace-period", type=int, default=10)
    parser.add_argument("--max-connections", type=int, default=500, help="PostgreSQL's max_connections.")
    parser.add_argument("--proxy-threads", type=int, default=10, help="lpstudy storage-proxy --threads.")
    parser.add_argument("--timeout", type=float, default=3600.0, help="Seconds a storage's run may take.")
    parser.add_argument("--restart-proxy-at", type=float, default=None,
                        help="Through a proxy: SIGKILL it when this share of the cells is done (0-1), then start it "
                             "again on its port --proxy-down-s later.")
    parser.add_argument("--proxy-down-s", type=float, default=10.0, help="How long the killed proxy stays down.")
    parser.add_argument("--proxies", type=int, default=1,
                        help="Through a proxy: this many in front of the database, the workers spread over them "
                             "(--restart-proxy-at kills the first).")
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    add_result_argument(parser, "load")
    args = parser.parse_args(argv)
    load_at_start = load_average()
    storages = [s.strip() for s in args.storages.split(",") if s.strip()]
    unknown = set(storages) - set(STORAGES)
    args.sqlite_cells = args.sqlite_cells or args.cells
    if unknown or args.cells % 10 or args.cells < 10 or args.sqlite_cells % 10 or args.workers % args.threads:
        parser.error(f"--storages takes {', '.join(STORAGES)}; --cells a multiple of 10; --workers a multiple of --threads")
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    postgres = None
    results: list[LoadResult] = []
    with tempfile.TemporaryDirectory(prefix="lpstudy-load-") as tmp:
        try:
            if set(storages) - {"sqlite"}:
                from tests.pgserver import ThrowawayPostgres

                postgres = ThrowawayPostgres(max_connections=args.max_connections).start()
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[note]}"),
                          TimeElapsedColumn(), console=__import__("rich.console").console.Console(stderr=True)) as bar:
                for storage in storages:
                    workers = args.sqlite_workers if storage == "sqlite" else args.workers
                    cells = args.sqlite_cells if storage == "sqlite" else args.cells
                    plan = LoadPlan(storage=storage, workers=workers, folds=cells // 10, trial_s=args.trial_ms / 1000,
                                    kill_fraction=args.kill_fraction, heartbeat_interval=args.heartbeat_interval,
                                    grace_period=args.grace_period, proxy_threads=args.proxy_threads,
                                    timeout_s=args.timeout, threads_per_process=1 if storage == "sqlite" else args.threads,
                                    restart_proxy_at=args.restart_proxy_at if storage in PROXIES else None,
                                    proxy_down_s=args.proxy_down_s, proxies=args.proxies)
                    task = bar.add_task(f"{storage} · {workers} workers", total=plan.cells, note="starting")

                    def progress(done: int, total: int, note: str, task=task) -> None:
                        bar.update(task, completed=done, note=note)

                    results.append(run_load(plan, Path(tmp) / storage, postgres, progress))
        finally:
            if postgres is not None:
                postgres.cleanup()
    if args.json:
        print(json.dumps({"max_connections": args.max_connections, "cores": os.cpu_count(),
                          "results": [asdict(r) | {"ok": r.ok} for r in results]}, indent=2))
    else:
        print_table(results)
    write_result(args.result, None, [["", *(r.storage for r in results)],
                                     *([label, *(show(r) for r in results)] for label, show in ROWS)],
                 title="Many workers on one grid: stand-in trials, real claims, heartbeats, retries and tells",
                 load_at_start=load_at_start,
                 notes=f"PostgreSQL's max_connections {args.max_connections}; heartbeat every "
                       f"{args.heartbeat_interval} s, grace period {args.grace_period} s; "
                       f"{args.kill_fraction:.0%} of the workers SIGKILLed mid-trial"
                       + (f"; the proxy SIGKILLed at {args.restart_proxy_at:.0%} of the cells and started again "
                          f"{args.proxy_down_s:g} s later." if args.restart_proxy_at is not None else "."))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    from benchmarks.bench_load import main as _main  # one copy of the module, the one the workers import

    sys.exit(_main())
