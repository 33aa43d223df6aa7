"""Optuna's storage for a study URL, built once, with heartbeats and a bounded retry of every call.

    sqlite:///FILE, postgresql+psycopg://...   RDBStorage: heartbeats, stale-trial retries, and the
                                               SQL engine that the metrics table shares
    journal:///FILE                            JournalStorage(JournalFileBackend): no heartbeats
    grpc://HOST:PORT                           GrpcStorageProxy (`lpstudy storage-proxy`): no heartbeats

Each kind opens its own (lpstudy.db.kinds); `open_storage` is the one entry, and `StudyStorage`
carries the kind and answers what callers need of it (claim a waiting trial, count trials, a
heartbeat or a lease, where an evaluation goes), so that no caller asks which kind it holds.
Every storage call is retried with backoff while the database (or the proxy) is unreachable
(lpstudy.db.outages); opening a storage is retried only where the caller waits (a worker): elsewhere
an unreachable URL fails within a few seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from optuna.storages import BaseStorage
from optuna.storages._cached_storage import _CachedStorage
from sqlalchemy.engine import Engine

from lpstudy.db.kinds import kind_of
from lpstudy.db.kinds.base import StorageKind
from lpstudy.db.outages import RetryPolicy, StorageUnavailable, is_transient, quiet_optuna
from lpstudy.db.urls import redact, storage_url
from lpstudy.errors import StudyUnavailable

if TYPE_CHECKING:
    import grpc
    import optuna
    from optuna.trial import TrialState

    from lpstudy.db.liveness import Liveness
    from lpstudy.db.proxy_calls import ProxyCalls
    from lpstudy.training.metrics import MetricRecord

__all__ = ["RetryPolicy", "StorageUnavailable", "StudyStorage", "is_transient", "make_proxy_server", "open_storage",
           "proxied_storage", "quiet_optuna"]
T = TypeVar("T")


@dataclass
class StudyStorage:
    """What a command needs of a study's storage: Optuna's storage object, its kind (which answers
    where curves live, how dead workers are noticed, whether it locks; lpstudy.db.kinds), and where
    SQL is at hand, the engine that the metrics table shares with Optuna's tables."""

    url: str
    kind: StorageKind
    optuna: BaseStorage
    engine: Engine | None
    retry: RetryPolicy
    proxy_calls: ProxyCalls | None = None  # lpstudy's own calls on its storage proxy (gRPC)
    closed: bool = False

    @property
    def display_url(self) -> str:
        return redact(self.url)

    def liveness(self, interval_s: int, grace_period_s: int | None, max_retry: int | None) -> Liveness:
        """How this storage notices a dead worker's trial (lpstudy.db.liveness): Optuna's heartbeats
        on SQL, lpstudy's lease elsewhere, every interval_s seconds; a RUNNING trial without a beat
        for grace_period_s (default twice the interval) is failed and retried with the same
        parameters up to max_retry times."""
        grace = int(grace_period_s) if grace_period_s else 2 * int(interval_s)
        return self.kind.liveness(self, int(interval_s), grace, max_retry)

    def close(self) -> None:
        """Let go of what the storage holds (a SQL engine's connections, a proxy's channel); the
        object is not used after. Also `with open_storage(url) as storage:`."""
        if not self.closed:
            self.closed = True
            self.kind.close(self)

    def __enter__(self) -> StudyStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.retry.call(fn, *args, **kwargs)

    # What a worker asks of its storage; each kind answers in its own way (lpstudy.db.kinds: one SQL
    # query, one call on lpstudy's proxy, or Optuna's storage API).

    def lock(self, name: str) -> AbstractContextManager[None]:
        """Hold the storage's lock called name for the block (lpstudy.db.locks; gRPC and MySQL hold
        none). What a caller does where no lock holds is the storage's `ask_within_target` to say."""
        return self.kind.lock(self.url, name)

    def ask_within_target(self, study: optuna.Study, target: int) -> optuna.Trial | None | object:
        """A new trial unless the study's n_trials target is taken (lpstudy.study.claims.ask_within_target
        says what it returns), asked under the storage's lock where it has one, else checked after."""
        return self.kind.ask_within_target(self, study, target)

    def claim_waiting(self, study: optuna.Study) -> int | None:
        """Move one WAITING trial of the study to RUNNING for this caller only: its id, or None."""
        return self.kind.claim_waiting(self, study)

    def count_trials(self, study: optuna.Study, states: tuple[TrialState, ...]) -> int:
        """How many of the study's trials are in these states."""
        return self.kind.count_trials(self, study, states)

    def trial_state(self, study: optuna.Study, trial_id: int) -> TrialState:
        """A trial's state now."""
        return self.kind.trial_state(self, study, trial_id)

    def for_grid_worker(self, study: optuna.Study) -> optuna.Study:
        """The study as a grid worker uses it (lpstudy.study.claims.for_grid_worker)."""
        return self.kind.for_grid_worker(self, study)

    def enqueue_cells(self, study: optuna.Study, missing_cells: Callable[[], list[dict[str, Any]]]) -> int:
        """Enqueue a WAITING trial for each parameter dict missing_cells() returns (looked up again
        on a retry); how many."""
        return self.kind.enqueue_cells(self, study, missing_cells)

    def prepare_curves(self) -> None:
        """Make the place a worker's evaluations go, where it is a table."""
        self.kind.prepare_curves(self)

    def write_evaluation(self, study_name: str, trial_id: int, trial_number: int, record: MetricRecord) -> None:
        """Store one evaluation of a running trial: a row of the metrics table (SQL kinds), else the
        trial's system attribute lpstudy_metrics:<step>."""
        self.kind.write_evaluations(self, study_name, trial_id, trial_number, [record])

    def add_finished_trial(self, study_name: str, study_id: int, template: optuna.trial.FrozenTrial,
                           records: list[MetricRecord]) -> int:
        """Store a trial that ended elsewhere (a synthetic study's) with its evaluations where this
        storage keeps curves, as a worker's would be; its id."""
        return self.kind.add_finished_trial(self, study_name, study_id, template, list(records))

    def delete_curves(self, study_name: str) -> int:
        """Delete the study's evaluations kept apart from its trials (the metrics table's rows on the
        SQL kinds; elsewhere they are the trials' attributes, gone with them); how many rows."""
        return self.kind.delete_curves(self, study_name)

    def write_evaluations(self, study_name: str, trial_id: int, trial_number: int,
                          records: list[MetricRecord]) -> None:
        """Store several evaluations of a trial at once, where this storage keeps curves."""
        self.kind.write_evaluations(self, study_name, trial_id, trial_number, list(records))


def open_storage(url: str | None, readonly: bool = False, create_tables: bool = False,
                 wait: bool = False, retry_s: float | None = None) -> StudyStorage:
    """Open the study storage at url (None: $LPSTUDY_STORAGE, else the default file): the one way
    every command, worker, reader and the proxy opens a database.

    readonly: for readers (status, export, report, the dashboards): a SQL database that refuses
    writes (SQLite mode=ro, PostgreSQL read-only sessions), no table creation and no schema check
    (both may write); StudyUnavailable when it cannot be read.
    create_tables: for `create`/`replicate`: make the file's folder, Optuna's tables and the metrics
    table. Otherwise a SQLite or journal file that is not there is refused, never created.
    An unreachable storage is one line (UserError) within a few seconds, unless wait: then opening is
    retried as every storage call is (RetryPolicy, LPSTUDY_STORAGE_RETRY_S), for a worker, which runs
    unattended. 200 workers started at once on a two-core machine timed out connecting (PostgreSQL
    forks a server process per connection; CONNECT_TIMEOUT_S) and stopped before their first trial.
    retry_s: the retry budget of this storage's calls (default: lpstudy.db.outages.retry_budget())."""
    quiet_optuna()
    url = storage_url(url)
    kind = kind_of(url)
    policy = RetryPolicy(url) if retry_s is None else RetryPolicy(url, budget_s=retry_s)
    if not create_tables:
        problem = kind.missing_file_message(url)
        if problem:
            raise StudyUnavailable(problem)
    def opened():
        return kind.open_optuna(url, readonly=readonly, create_tables=create_tables, policy=policy)

    optuna_storage, engine = policy.call(opened) if wait else opened()
    return StudyStorage(url, kind, optuna_storage, engine, policy, kind.proxy_calls(url, policy))


def proxied_storage(url: str) -> tuple[StudyStorage, BaseStorage]:
    """What a gRPC proxy server serves for url: the study storage (its SQL engine answers lpstudy's
    own calls, lpstudy.db.proxy_calls) and, for Optuna's calls, Optuna's cache over the retrying RDB
    storage, as run_grpc_proxy_server recommends (get_storage puts it in front of an RDBStorage),
    which also takes the parameters of trials it has not read (_ProxyCache)."""
    storage = open_storage(url, create_tables=True)
    return storage, _ProxyCache(storage.optuna)


def make_proxy_server(url: str, host: str, port: int, threads: int) -> grpc.Server:
    """`lpstudy storage-proxy`'s server, not started: Optuna's run_grpc_proxy_server for the SQL
    database at url (its private make_server, checked in tests/test_optuna_private.py), with
    lpstudy's own calls (lpstudy.db.proxy_calls) beside Optuna's on the same port. RuntimeError
    where it cannot listen."""
    from concurrent.futures import ThreadPoolExecutor

    from optuna.storages._grpc.server import make_server

    from lpstudy.db.proxy_calls import add_proxy_calls

    storage, backend = proxied_storage(url)  # the workers' retrying storage: the proxy too rides out a restart
    server = make_server(backend, host, port, ThreadPoolExecutor(max_workers=threads))
    add_proxy_calls(server, storage, backend)
    return server


class _ProxyCache(_CachedStorage):
    """Optuna's cache in front of the RDB storage (what get_storage makes), except that a trial it has
    not read takes its parameters straight on the RDB storage, which checks them against the study's
    other trials itself, instead of failing with KeyError: lpstudy's proxy claims trials with SQL of
    its own (lpstudy.db.proxy_calls), and the cache knows only the trials some GetTrials read.
    tests/test_optuna_private.py checks it."""

    def set_trial_param(self, trial_id, param_name, param_value_internal, distribution) -> None:
        with self._lock:
            known = trial_id in self._trial_id_to_study_id_and_number
        if known:
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
        else:
            self._backend.set_trial_param(trial_id, param_name, param_value_internal, distribution)
