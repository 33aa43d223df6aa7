"""Optuna's storage for a study URL, built once, with heartbeats and a bounded retry of every call.

    sqlite:///FILE, postgresql+psycopg://...   RDBStorage: heartbeats, stale-trial retries, and the
                                               SQL engine that the metrics table shares
    journal:///FILE                            JournalStorage(JournalFileBackend): no heartbeats
    grpc://HOST:PORT                           GrpcStorageProxy (`lpstudy storage-proxy`): no heartbeats

Each kind opens its own (lpstudy.db.kinds); `open_storage` is the one entry, and `StudyStorage`
carries the kind, so that callers ask it (`storage.kind.curves_in_table`) rather than compare names.
Every storage call is retried with backoff while the database (or the proxy) is unreachable
(lpstudy.db.outages); opening a storage is retried only where the caller waits (a worker): elsewhere
an unreachable URL fails within a few seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from optuna.storages import BaseStorage
from optuna.storages._cached_storage import _CachedStorage
from sqlalchemy.engine import Engine

from lpstudy.db.kinds import kind_of
from lpstudy.db.kinds.base import StorageKind
from lpstudy.db.outages import RetryPolicy, StorageUnavailable, is_transient
from lpstudy.db.urls import redact, storage_url
from lpstudy.errors import StudyUnavailable

if TYPE_CHECKING:
    import grpc

    from lpstudy.db.proxy_calls import ProxyCalls

__all__ = ["RetryPolicy", "StorageUnavailable", "StudyStorage", "is_transient", "make_proxy_server", "open_storage",
           "proxied_storage"]
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

    @property
    def display_url(self) -> str:
        return redact(self.url)

    def configure_heartbeat(self, interval_s: int | None, grace_period_s: int | None,
                            max_retry: int | None) -> bool:
        """Turn Optuna's heartbeats on (the kinds that have them): a RUNNING trial without a
        heartbeat for grace_period_s is failed by the next worker that asks for a trial, and retried
        with the same parameters up to max_retry times. Returns whether heartbeats are on."""
        if not self.kind.optuna_heartbeats or not interval_s:
            return False
        from lpstudy.db.retries import RetryCallback

        rdb = self.optuna
        rdb.heartbeat_interval = int(interval_s)
        rdb.grace_period = int(grace_period_s) if grace_period_s else 2 * int(interval_s)
        callback = RetryCallback(max_retry)  # Optuna's RetryHeartbeatStaleTrialCallback, interruptions free
        rdb.heartbeat_stale_trial_callback = callback
        rdb.failed_trial_callback = callback
        return True

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.retry.call(fn, *args, **kwargs)


def quiet_optuna() -> None:
    """Optuna's info lines and experimental warnings off: lpstudy's commands print their own lines.
    Every storage lpstudy opens is opened so (open_storage)."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")


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
