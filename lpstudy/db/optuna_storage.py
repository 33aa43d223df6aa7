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
from typing import Any, TypeVar

from optuna.storages import BaseStorage
from sqlalchemy.engine import Engine

from lpstudy.db.kinds import kind_of
from lpstudy.db.kinds.base import StorageKind
from lpstudy.db.outages import RetryPolicy, StorageUnavailable, is_transient
from lpstudy.db.urls import redact, storage_url
from lpstudy.errors import StudyUnavailable

__all__ = ["RetryPolicy", "StorageUnavailable", "StudyStorage", "is_transient", "open_storage", "proxied_storage"]
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
                 wait: bool = False) -> StudyStorage:
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
    forks a server process per connection; CONNECT_TIMEOUT_S) and stopped before their first trial."""
    quiet_optuna()
    url = storage_url(url)
    kind = kind_of(url)
    policy = RetryPolicy(url)
    if not create_tables:
        problem = kind.missing_file_message(url)
        if problem:
            raise StudyUnavailable(problem)
    def opened():
        return kind.open_optuna(url, readonly=readonly, create_tables=create_tables, policy=policy)

    optuna_storage, engine = policy.call(opened) if wait else opened()
    return StudyStorage(url, kind, optuna_storage, engine, policy)


def proxied_storage(url: str) -> BaseStorage:
    """The storage a gRPC proxy server should serve for url: Optuna's cache over the retrying RDB
    storage, as run_grpc_proxy_server recommends (get_storage puts it in front of an RDBStorage)."""
    from optuna.storages import get_storage

    return get_storage(open_storage(url, create_tables=True).optuna)
