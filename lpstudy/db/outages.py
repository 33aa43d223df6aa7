"""Riding out a storage outage: every storage call is retried with backoff while the database (or
the gRPC proxy) is unreachable, for at most the retry budget, so that workers ride out a database
restart or its volume moving to another node; after that the call fails with one clear line
(StorageUnavailable, a DatabaseUnreachable: exit status 75, not a user's mistake). Opening a storage
is retried only where the command waits for it: a worker (DEFAULT_RETRY_S), `create` and `replicate`
(CREATE_RETRY_S, a command a person may be waiting on); other commands fail within CONNECT_TIMEOUT_S
seconds on an unreachable URL (lpstudy.db.kinds.base), with exit status 75 too.

LPSTUDY_STORAGE_RETRY_S (seconds, a number >= 0) sets the budget of every command; a value that is
no such number is refused in one line (exit status 2).

Not to be confused with lpstudy.db.retries, which enqueues a failed *trial* again.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import optuna
import sqlalchemy as sa
from optuna.storages import BaseStorage, GrpcStorageProxy, RDBStorage

from lpstudy.db.urls import first_line, redact
from lpstudy.errors import DatabaseUnreachable, NoStudiesYet, StudyUnavailable, UserError

RETRY_ENV = "LPSTUDY_STORAGE_RETRY_S"
# A worker runs unattended: it waits out a database that moves to another node with its volume (a
# drain: the pod is rescheduled, the volume detached and attached again, PostgreSQL recovers).
DEFAULT_RETRY_S = 600.0
# `create` and `replicate`: a person may be waiting at a terminal; a creator run as a Job is run again
# on exit status 75 (deploy/k8s/base/create-study.yaml).
CREATE_RETRY_S = 120.0
T = TypeVar("T")

# Called with ("retry", None) before each retry of a storage call and ("outage", seconds) when an
# outage ends (the storage answered again, or the budget ran out): lpstudy.study.telemetry counts them.
listeners: list[Callable[[str, float | None], None]] = []


class StorageUnavailable(DatabaseUnreachable):
    """The storage stayed unreachable for longer than the retry budget."""


def retry_budget(default: float = DEFAULT_RETRY_S) -> float:
    """The retry budget in seconds: LPSTUDY_STORAGE_RETRY_S, else default. UserError (one line) for a
    value that is not a finite number of seconds >= 0."""
    from lpstudy.values import seconds_from_environment

    return seconds_from_environment(RETRY_ENV, default, "how long to wait for an unreachable database")


def unreachable_or_unavailable(exc: BaseException) -> type[StudyUnavailable]:
    """The error to raise for exc, a failure to open or read a database: DatabaseUnreachable (exit
    status 75) when the connection failed (is_transient), else StudyUnavailable (a mistake: 2)."""
    return DatabaseUnreachable if is_transient(exc) else StudyUnavailable


def _tell(event: str, value: float | None = None) -> None:
    for listener in listeners:
        try:
            listener(event, value)
        except Exception:  # pragma: no cover - a listener never stops a storage call
            pass


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """exc, its cause, its cause's cause, ..., each once."""
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def is_transient(exc: BaseException) -> bool:
    """A lost or refused connection, a locked SQLite file, an unavailable gRPC proxy: worth retrying."""
    for e in exception_chain(exc):
        if isinstance(e, (StorageUnavailable, NoStudiesYet)):
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
                    self._note_given_up()
                    raise StorageUnavailable(
                        f"the study database {redact(self.url)} could not be reached: it stayed unreachable "
                        f"for {elapsed:.0f} s ({first_line(exc, self.url)}); check that it is running and "
                        f"reachable at that address, then run the command again (LPSTUDY_STORAGE_RETRY_S "
                        f"sets how long to wait, now {self.budget_s:g} s)") from None
                self._note_down(exc)
                _tell("retry")
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
                down_s = time.monotonic() - self._down_since
                print(f"lpstudy: storage back after {down_s:.1f} s", file=sys.stderr, flush=True)
                self._down_since = None
                _tell("outage", down_s)

    def _note_given_up(self) -> None:
        with self._lock:
            if self._down_since is not None:
                _tell("outage", time.monotonic() - self._down_since)
                self._down_since = None


# Optuna's storage interface (BaseStorage): every call that Optuna, a study, a trial or lpstudy makes.
STORAGE_METHODS = (
    "create_new_study", "delete_study", "set_study_user_attr", "set_study_system_attr",
    "get_study_id_from_name", "get_study_name_from_id", "get_study_directions",
    "get_study_user_attrs", "get_study_system_attrs", "get_all_studies", "create_new_trial",
    "set_trial_param", "get_trial_id_from_study_id_trial_number", "get_trial_number_from_id",
    "get_trial_param", "set_trial_state_values", "set_trial_intermediate_value",
    "set_trial_user_attr", "set_trial_system_attr", "get_trial", "get_all_trials", "get_n_trials",
    "get_best_trial", "get_trial_params", "get_trial_user_attrs", "get_trial_system_attrs",
)
# RDBStorage's too: its heartbeats (BaseHeartbeat, _get_stale_trial_ids private), and the private
# methods that Optuna's cache calls on it in place of public ones. optuna.load_study puts that cache
# (optuna.storages._CachedStorage) in front of every RDBStorage, so a worker's trials are read
# (_get_trials), created (_create_new_trial) and given parameters (_set_trial_param) through these.
# tests/test_optuna_private.py reads Optuna's cache to check that this list covers every call it makes.
RDB_METHODS = (
    *STORAGE_METHODS, "record_heartbeat", "_get_stale_trial_ids",
    "_create_new_trial", "_set_trial_param", "_get_trials", "_get_best_trial_id",
)


def _retrying_method(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        policy: RetryPolicy | None = getattr(self, "_lpstudy_retry", None)
        if policy is None or getattr(self._lpstudy_depth, "value", False):
            return method(self, *args, **kwargs)  # a nested call: the outer call retries
        self._lpstudy_depth.value = 1
        try:
            return policy.call(method, self, *args, **kwargs)
        finally:
            self._lpstudy_depth.value = 0

    return wrapper


def with_retries(*names: str) -> Callable[[type], type]:
    """Wrap the storage class's methods called names in the retry policy. A name the class lacks is
    an error when this module is imported (Optuna renamed or dropped it): its calls would otherwise
    go unretried without a word."""
    def wrap(cls: type) -> type:
        missing = [name for name in names if not callable(getattr(cls, name, None))]
        if missing:
            raise ImportError(f"optuna {optuna.__version__}: {cls.__name__} has no {', '.join(missing)}; "
                              "lpstudy's storage retries (lpstudy.db.outages) must follow Optuna's change")
        for name in names:
            setattr(cls, name, _retrying_method(getattr(cls, name)))
        return cls

    return wrap


@with_retries(*RDB_METHODS)
class RetryingRDBStorage(RDBStorage):
    """RDBStorage whose calls ride out a database restart (see RetryPolicy)."""


@with_retries(*STORAGE_METHODS)
class RetryingGrpcStorageProxy(GrpcStorageProxy):
    """GrpcStorageProxy whose calls ride out a proxy restart (see RetryPolicy)."""


def attach(storage: BaseStorage, policy: RetryPolicy) -> None:
    """Retry the storage's calls under policy (a storage made without it is never retried)."""
    setattr(storage, "_lpstudy_retry", policy)  # read by the wrapped methods (_retrying_method)
    setattr(storage, "_lpstudy_depth", threading.local())


def quiet_optuna() -> None:
    """Optuna's info lines and experimental warnings off: lpstudy's commands print their own lines.
    Every storage lpstudy opens is opened so (open_storage)."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")
