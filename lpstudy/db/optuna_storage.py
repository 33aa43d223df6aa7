"""Optuna's storage for a study URL, built once, with heartbeats and a bounded retry of every call.

    sqlite:///FILE, postgresql+psycopg://...   RDBStorage: heartbeats, stale-trial retries, and the
                                               SQL engine that the metrics table shares
    journal:///FILE                            JournalStorage(JournalFileBackend): no heartbeats
    grpc://HOST:PORT                           GrpcStorageProxy (`lpstudy storage-proxy`): no heartbeats

Every storage call is retried with backoff while the database (or the proxy) is unreachable, for at
most `retry_s` seconds (LPSTUDY_STORAGE_RETRY_S, default 120), so that workers ride out a database
restart; after that the call fails with one clear line (StorageUnavailable). Opening a storage is
never retried: an unreachable URL fails within CONNECT_TIMEOUT_S seconds.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import optuna
import sqlalchemy as sa
from optuna.storages import BaseStorage, GrpcStorageProxy, JournalStorage, RDBStorage
from sqlalchemy.engine import Engine

from lpstudy.db.engines import CONNECT_TIMEOUT_S, engine_kwargs, engine_url, first_line, serialize_sqlite_writes
from lpstudy.db.metrics_table import ensure_metrics_table
from lpstudy.db.urls import (grpc_address, journal_path, missing_file_message, prepare_to_create, redact,
                             storage_kind, storage_url)
from lpstudy.errors import StudyUnavailable, UserError

RETRY_ENV = "LPSTUDY_STORAGE_RETRY_S"
DEFAULT_RETRY_S = 120.0
T = TypeVar("T")


class StorageUnavailable(UserError):
    """The storage stayed unreachable for longer than the retry budget."""


def retry_budget() -> float:
    text = os.environ.get(RETRY_ENV)
    if not text:
        return DEFAULT_RETRY_S
    try:
        return max(0.0, float(text))
    except ValueError:
        raise UserError(f"{RETRY_ENV} must be a number of seconds, got {text!r}") from None


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_transient(exc: BaseException) -> bool:
    """A lost or refused connection, a locked SQLite file, an unavailable gRPC proxy: worth retrying."""
    for e in _chain(exc):
        if isinstance(e, StorageUnavailable):
            return False
        if "readonly database" in str(e) or "read-only transaction" in str(e):
            return False  # a write refused by a read-only storage: retrying cannot help
        if isinstance(e, (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.DisconnectionError)):
            return True
        if isinstance(e, sa.exc.DBAPIError) and e.connection_invalidated:
            return True
        code = getattr(e, "code", None)
        if callable(code) and type(e).__module__.startswith("grpc"):
            try:
                name = getattr(code(), "name", "")
            except Exception:  # pragma: no cover - a grpc error without a code
                name = ""
            if name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
                return True
        if isinstance(e, ConnectionError):
            return True
    return False


@dataclass
class RetryPolicy:
    """How long, and how, a storage call is retried while the storage is unreachable."""

    url: str
    budget_s: float = field(default_factory=retry_budget)
    first_wait_s: float = 0.25
    max_wait_s: float = 5.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _down_since: float | None = field(default=None, repr=False)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """fn(*args, **kwargs), retried on transient errors for at most budget_s seconds."""
        start = time.monotonic()
        wait = self.first_wait_s
        attempt = 0
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                elapsed = time.monotonic() - start
                if elapsed >= self.budget_s:
                    raise StorageUnavailable(
                        f"the study storage {redact(self.url)} stayed unreachable for {elapsed:.0f} s "
                        f"({first_line(exc, self.url)}); check that it is running, then start the "
                        f"worker again (LPSTUDY_STORAGE_RETRY_S sets how long to wait)") from None
                self._note_down(exc)
                time.sleep(min(wait, max(0.0, self.budget_s - elapsed)))
                wait = min(self.max_wait_s, wait * 2)
                attempt += 1
                continue
            if attempt:
                self._note_up()
            return result

    def _note_down(self, exc: BaseException) -> None:
        with self._lock:
            if self._down_since is None:
                self._down_since = time.monotonic()
                print(f"lpstudy: storage {redact(self.url)} unreachable ({first_line(exc, self.url)}); "
                      f"retrying for up to {self.budget_s:.0f} s", file=sys.stderr, flush=True)

    def _note_up(self) -> None:
        with self._lock:
            if self._down_since is not None:
                print(f"lpstudy: storage back after {time.monotonic() - self._down_since:.1f} s",
                      file=sys.stderr, flush=True)
                self._down_since = None


# The storage methods Optuna calls; each is wrapped in the retry policy.
_STORAGE_METHODS = (
    "create_new_study", "delete_study", "set_study_user_attr", "set_study_system_attr",
    "get_study_id_from_name", "get_study_name_from_id", "get_study_directions",
    "get_study_user_attrs", "get_study_system_attrs", "get_all_studies", "create_new_trial",
    "set_trial_param", "get_trial_id_from_study_id_trial_number", "get_trial_number_from_id",
    "get_trial_param", "set_trial_state_values", "set_trial_intermediate_value",
    "set_trial_user_attr", "set_trial_system_attr", "get_trial", "get_all_trials", "get_n_trials",
    "get_best_trial", "get_trial_params", "get_trial_user_attrs", "get_trial_system_attrs",
    "record_heartbeat", "_get_stale_trial_ids",
)


def _retrying_method(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def wrapper(self, *args: Any, **kwargs: Any) -> T:
        policy: RetryPolicy | None = getattr(self, "_lpstudy_retry", None)
        if policy is None or getattr(self._lpstudy_depth, "value", 0):
            return method(self, *args, **kwargs)  # a nested call: the outer call retries
        self._lpstudy_depth.value = 1
        try:
            return policy.call(method, self, *args, **kwargs)
        finally:
            self._lpstudy_depth.value = 0

    return wrapper


def _with_retries(cls: type) -> type:
    for name in _STORAGE_METHODS:
        if hasattr(cls, name):
            setattr(cls, name, _retrying_method(getattr(cls, name)))
    return cls


@_with_retries
class RetryingRDBStorage(RDBStorage):
    """RDBStorage whose calls ride out a database restart (see RetryPolicy)."""


@_with_retries
class RetryingGrpcStorageProxy(GrpcStorageProxy):
    """GrpcStorageProxy whose calls ride out a proxy restart (see RetryPolicy)."""


def _attach(storage: BaseStorage, policy: RetryPolicy) -> None:
    storage._lpstudy_retry = policy
    storage._lpstudy_depth = threading.local()


@dataclass
class StudyStorage:
    """What a command needs of a study's storage: Optuna's storage object, and where SQL is at hand,
    the engine that the metrics table shares with Optuna's tables."""

    url: str
    kind: str  # sqlite, postgresql, mysql, journal, grpc
    optuna: BaseStorage
    engine: Engine | None
    retry: RetryPolicy

    @property
    def is_sql(self) -> bool:
        return self.engine is not None

    @property
    def supports_heartbeat(self) -> bool:
        return isinstance(self.optuna, RDBStorage)

    @property
    def display_url(self) -> str:
        return redact(self.url)

    def configure_heartbeat(self, interval_s: int | None, grace_period_s: int | None,
                            max_retry: int | None) -> bool:
        """Turn heartbeats on (RDB storages only): a RUNNING trial without a heartbeat for
        grace_period_s is failed by the next worker that asks for a trial, and retried with the same
        parameters up to max_retry times. Returns whether heartbeats are on."""
        if not self.supports_heartbeat or not interval_s:
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


def _no_tables(exc: BaseException) -> bool:
    """Optuna's tables are missing: an empty database, not a broken one."""
    for e in _chain(exc):
        text = str(e).lower()
        if "version_info" in text and ("does not exist" in text or "no such table" in text):
            return True
    return False


def open_storage(url: str | None, readonly: bool = False, create_tables: bool = False) -> StudyStorage:
    """Open the study storage at url (None: $LPSTUDY_STORAGE, else the default file): the one way
    every command, worker, reader and the proxy opens a database.

    readonly: for readers (status, export, report, the dashboards): a SQL database that refuses
    writes (SQLite mode=ro, PostgreSQL read-only sessions), no table creation and no schema check
    (both may write); StudyUnavailable when it cannot be read.
    create_tables: for `create`/`replicate`: make the file's folder, Optuna's tables and the metrics
    table. Otherwise a SQLite or journal file that is not there is refused, never created.
    An unreachable storage is one line (UserError) within a few seconds."""
    url = storage_url(url)
    kind = storage_kind(url)
    policy = RetryPolicy(url)
    if not create_tables:
        problem = missing_file_message(url)
        if problem:
            raise StudyUnavailable(problem)
    if kind in ("sqlite", "postgresql", "mysql"):
        rdb = _open_rdb(url, readonly, create_tables, policy)
        if not readonly:  # a reader fails at once: a refused write is no outage to wait out
            _attach(rdb, policy)
        return StudyStorage(url, kind, rdb, rdb.engine, policy)
    if kind == "journal":
        from optuna.storages.journal import JournalFileBackend

        if create_tables:
            prepare_to_create(url)
        path = journal_path(url, creating=create_tables)
        try:
            journal = JournalStorage(JournalFileBackend(str(path)))
        except OSError as exc:
            raise UserError(f"cannot open the journal file {path}: {exc.strerror}") from None
        return StudyStorage(url, kind, journal, None, policy)
    host, port = grpc_address(url)
    try:
        proxy = RetryingGrpcStorageProxy(host=host, port=port)
        proxy.wait_server_ready(timeout=CONNECT_TIMEOUT_S)
    except ImportError:
        raise UserError("gRPC storage needs grpcio: pip install 'lpstudy[grpc]'") from None
    except ConnectionError:
        raise UserError(f"no storage proxy answers at {url} within {CONNECT_TIMEOUT_S} s; "
                        "start one with `lpstudy storage-proxy` or check --storage") from None
    _attach(proxy, policy)
    return StudyStorage(url, kind, proxy, None, policy)


def _open_rdb(url: str, readonly: bool, create_tables: bool, policy: RetryPolicy) -> RDBStorage:
    if create_tables:
        prepare_to_create(url)
    try:
        rdb = RetryingRDBStorage(engine_url(url, readonly), engine_kwargs=engine_kwargs(url, readonly),
                                 skip_table_creation=readonly or not create_tables,
                                 skip_compatibility_check=readonly)
        if not readonly:
            serialize_sqlite_writes(rdb.engine)  # the WAITING -> RUNNING claim is atomic on SQLite too
        if readonly:
            with rdb.engine.connect() as conn:  # reach it now, so the error is one clear line
                conn.execute(sa.text("SELECT 1"))
        if create_tables:
            policy.call(ensure_metrics_table, rdb.engine)
        return rdb
    except ImportError:
        raise UserError(f"the database driver for {redact(url)} is not installed; "
                        "pip install 'lpstudy[postgres]'") from None
    except (sa.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError) as exc:
        if _no_tables(exc):
            raise StudyUnavailable(f"the database {redact(url)} holds no studies yet; create one first "
                                   "(`lpstudy create` or `lpstudy replicate`) or check --storage / "
                                   "LPSTUDY_STORAGE") from None
        raise StudyUnavailable(f"cannot open the study database {redact(url)}: {first_line(exc, url)}; "
                               "check that it is running and reachable, and the URL "
                               "(--storage or LPSTUDY_STORAGE)") from None
    except RuntimeError as exc:  # Optuna's schema version check
        raise UserError(f"the study database {redact(url)} cannot be used: {first_line(exc)}") from None


def proxied_storage(url: str) -> BaseStorage:
    """The storage a gRPC proxy server should serve for url (Optuna's cache over the retrying RDB
    storage, as run_grpc_proxy_server recommends)."""
    from optuna.storages import get_storage

    opened = open_storage(url, create_tables=True)
    return get_storage(opened.optuna) if isinstance(opened.optuna, RDBStorage) else opened.optuna
