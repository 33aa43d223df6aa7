"""Optuna's storage for a study URL, built once, with heartbeats and a bounded retry of every call.

    sqlite:///FILE, postgresql+psycopg://...   RDBStorage: heartbeats, stale-trial retries, and the
                                               SQL engine that the metrics table shares
    journal:///FILE                            JournalStorage(JournalFileBackend): no heartbeats
    grpc://HOST:PORT                           GrpcStorageProxy (`lpstudy storage-proxy`): no heartbeats

Each kind opens its own (lpstudy.db.kinds); `open_storage` is the one entry: the storage object of
the URL's kind (lpstudy.db.kinds.base.StudyStorage), which answers what callers need of it (claim a
waiting trial, count trials, a heartbeat or a lease, where an evaluation goes, its reads), so that no
caller asks which kind it holds.
Every storage call is retried with backoff while the database (or the proxy) is unreachable
(lpstudy.db.outages); opening a storage is retried only where the caller waits (a worker): elsewhere
an unreachable URL fails within a few seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from optuna.storages import BaseStorage
from optuna.storages._cached_storage import _CachedStorage

from lpstudy.db.kinds import storage_at
from lpstudy.db.kinds.base import StudyStorage
from lpstudy.db.outages import RetryPolicy, StorageUnavailable, is_transient, quiet_optuna

if TYPE_CHECKING:
    import grpc
    from optuna.distributions import BaseDistribution
    from optuna.storages import RDBStorage

__all__ = ["RetryPolicy", "StorageUnavailable", "StudyStorage", "is_transient", "make_proxy_server", "open_storage",
           "proxied_storage", "quiet_optuna"]


def open_storage(url: str | None, readonly: bool = False, create_tables: bool = False,
                 wait: bool = False, retry_s: float | None = None) -> StudyStorage:
    """Open the study storage at url (None: $LPSTUDY_STORAGE, else the default file), Optuna's
    storage opened now: the one way every command, worker and the proxy opens a database.

    readonly: for readers (the dashboards' Optuna backend): a SQL database that refuses
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
    return storage_at(url, readonly=readonly, retry_s=retry_s).open(create_tables=create_tables, wait=wait)


def proxied_storage(storage: StudyStorage) -> tuple[StudyStorage, BaseStorage]:
    """What a gRPC proxy server serves for url: the study storage (its SQL engine answers lpstudy's
    own calls, lpstudy.db.proxy_calls) and, for Optuna's calls, Optuna's cache over the retrying RDB
    storage, as run_grpc_proxy_server recommends (get_storage puts it in front of an RDBStorage),
    which also takes the parameters of trials it has not read (_ProxyCache)."""
    storage.open(create_tables=True)
    return storage, _ProxyCache(cast("RDBStorage", storage.optuna))  # the SQL kinds' Optuna storage


def make_proxy_server(storage: StudyStorage, host: str, port: int, threads: int) -> grpc.Server:
    """`lpstudy storage-proxy`'s server, not started: Optuna's run_grpc_proxy_server for the SQL
    database of storage (opened here; its private make_server, checked in tests/test_optuna_private.py), with
    lpstudy's own calls (lpstudy.db.proxy_calls) beside Optuna's on the same port. RuntimeError
    where it cannot listen."""
    from concurrent.futures import ThreadPoolExecutor

    from optuna.storages._grpc.server import make_server

    from lpstudy.db.proxy_calls import add_proxy_calls

    storage, backend = proxied_storage(storage)  # the workers' retrying storage: the proxy too rides out a restart
    server = make_server(backend, host, port, ThreadPoolExecutor(max_workers=threads))
    add_proxy_calls(server, storage, backend)
    return server


class _ProxyCache(_CachedStorage):
    """Optuna's cache in front of the RDB storage (what get_storage makes), except that a trial it has
    not read takes its parameters straight on the RDB storage, which checks them against the study's
    other trials itself, instead of failing with KeyError: lpstudy's proxy claims trials with SQL of
    its own (lpstudy.db.proxy_calls), and the cache knows only the trials some GetTrials read.
    tests/test_optuna_private.py checks it."""

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float,
                        distribution: BaseDistribution) -> None:
        with self._lock:
            known = trial_id in self._trial_id_to_study_id_and_number
        if known:
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
        else:
            self._backend.set_trial_param(trial_id, param_name, param_value_internal, distribution)
