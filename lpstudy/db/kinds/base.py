"""The storage at one URL: one object per backend, made once from the URL (as Optuna's get_storage
makes one storage object per backend), that holds the URL and, opened when first needed and then
kept, Optuna's storage and, where SQL is at hand, the engine.

    storage = storage_at(url)              # lpstudy.db.kinds: the URL's kind picks the class; nothing opened
    storage = open_storage(url, ...)       # lpstudy.db.optuna_storage: the same, with Optuna's storage opened now
    reader = open_reader(url)              # the same object, read-only, opened on its first read

Everything a caller needs of it is a method, or an object it returns, never a flag: its URL's rules
(its local file, its read-only form, its default checkpoint store), its lock across processes, what
a worker asks (claim a waiting trial, count trials, a new trial within the target, how a dead
worker is noticed: `liveness`), where learning curves go, and the reads of the read side
(lpstudy.db.trial_reader: `read(name, fn)`, `studies()`, ...). `close()` lets go of what it holds.

Telling a URL's kind and making the object import neither Optuna nor a database driver (the command
line's help and checks stay quick); opening it does. The defaults here are those of a server that
is not a SQL database (no local file, no engine, no lock): Optuna's storage API answers every
question. What the SQL kinds share is in `sql`, what the kinds kept in a local file share in `files`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lpstudy.db import optuna_private
from lpstudy.db.kinds.files import NoFile
from lpstudy.db.locking import CREATE_LOCK, NoLock
from lpstudy.db.trial_reader import OptunaReads
from lpstudy.db.urls import redact
from lpstudy.errors import StudyUnavailable, UserError

if TYPE_CHECKING:  # Optuna and the retries load when a storage is opened: `lpstudy --help` stays quick
    from lpstudy.db.asking import Wait
    import optuna
    from optuna.storages import BaseStorage
    from optuna.study import Study  # not optuna.Study inside the class: its property `optuna` hides the module
    from optuna.trial import FrozenTrial, Trial, TrialState
    from sqlalchemy.engine import Engine

    import pandas as pd

    from lpstudy.db.kinds.files import LocalFile
    from lpstudy.db.liveness import Liveness
    from lpstudy.db.locking import LockAcrossProcesses
    from lpstudy.db.study_queries import StudyTables
    from lpstudy.db.trial_reader import StudyRecord
    from lpstudy.db.outages import RetryPolicy
    from lpstudy.db.proxy_calls import ProxyCalls
    from lpstudy.training.metrics import MetricRecord

T = TypeVar("T")
CONNECT_TIMEOUT_S = 5  # an unreachable server fails within this many seconds


class StudyStorage:
    """The storage at one URL (see the module). A subclass per kind says what differs; a caller
    never asks which kind it holds. What varies along its own axis is an object the kind composes
    in: its local file (`file`), its lock across processes (`locking`), its reads (`reads`)."""

    name: str = ""  # as the errors say it: sqlite, postgresql, ...
    url_form: str | None = None  # how its URL looks, in the list of forms an unknown URL is told
    companions: tuple[str, ...] = ()  # files the database keeps beside its local file, FILE<suffix>
    listed: int = 100  # where its URL form comes in the list an unknown URL is told (lpstudy.db.kinds)

    @classmethod
    def owns(cls, url: str) -> bool:
        """Whether url is of this kind (by its scheme, here the kind's name in any case); says
        nothing about whether it can be used."""
        return "://" in url and url.split("://", 1)[0].lower() == cls.name

    def __init__(self, url: str, readonly: bool = False, retry_s: float | None = None) -> None:
        """The storage at url, nothing opened; UserError (one line) unless the URL can be used.
        readonly: a reader's (status, export, report, the dashboards): where the database allows it,
        one that refuses writes (SQLite mode=ro, PostgreSQL read-only sessions). retry_s: the retry
        budget of its calls (default: lpstudy.db.outages.retry_budget())."""
        self.url, self.readonly, self._retry_s = url, readonly, retry_s
        self.validate()
        self._optuna: BaseStorage | None = None
        self._opening = threading.RLock()  # a dashboard's sessions share one storage
        self.closed = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.display_url}{' read-only' if self.readonly else ''}>"

    @property
    def display_url(self) -> str:
        return redact(self.url)

    # --- what the kind composes in ------------------------------------------------------------------

    @cached_property
    def file(self) -> LocalFile | NoFile:
        """The local file the data is kept in (lpstudy.db.kinds.files.LocalFile); here none, a server's."""
        return NoFile()

    @cached_property
    def locking(self) -> NoLock | LockAcrossProcesses:
        """Its lock across processes (lpstudy.db.locking); here none."""
        return NoLock()

    @cached_property
    def reads(self) -> OptunaReads:
        """How it is read (lpstudy.db.trial_reader); here through Optuna's storage API."""
        return OptunaReads(self)

    # --- the URL's rules ---------------------------------------------------------------------------

    def validate(self) -> None:
        """UserError, one line, unless the URL can be used (a port that is a number, a file named)."""

    def local_file(self, creating: bool = False) -> Path | None:
        """The file the data is kept in; None for a server."""
        return self.file.path(creating)

    def readonly_url(self) -> str:
        """A URL that cannot write, where the database allows it."""
        return self.url

    def missing_file_message(self) -> str | None:
        """Why the URL cannot be read (no such file, a folder, not a database), or None."""
        return self.file.missing_message()

    def prepare_to_create(self) -> Path | None:
        """Before a study is created: make the folder of its file; the folder if it was made now."""
        return self.file.prepare_to_create()

    def default_artifacts(self) -> str | None:
        """Where trials keep their checkpoints when no --artifacts is given; None: nowhere."""
        return self.file.default_artifacts()

    def check_readable(self) -> None:
        """StudyUnavailable (one line) now, rather than an error page later, where the storage cannot
        be read: a mistyped file, and where a server is reached directly, a refused login."""
        problem = self.missing_file_message()
        if problem:
            raise StudyUnavailable(problem)

    def check_proxy_target(self) -> None:
        """UserError unless `lpstudy storage-proxy` can serve this storage (a SQL database)."""
        raise UserError(f"the storage proxy serves a SQL database, not {self.name} storage {self.display_url!r}; "
                        "pass --storage postgresql+psycopg://USER:PASSWORD@HOST/DB")

    # --- opening: once, kept until close() ---------------------------------------------------------

    @cached_property
    def retry(self) -> RetryPolicy:
        """How every call on this storage is retried through an outage (lpstudy.db.outages)."""
        from lpstudy.db.outages import RetryPolicy

        return RetryPolicy(self.url) if self._retry_s is None else RetryPolicy(self.url, budget_s=self._retry_s)

    def open(self, create_tables: bool = False, wait: bool = False) -> StudyStorage:
        """Open Optuna's storage now (lpstudy.db.optuna_storage.open_storage says what create_tables
        and wait mean), or again after close(); this object. StudyUnavailable for a file that is not
        there, unless creating."""
        with self._opening:
            self.closed = False
            if self._optuna is None:
                def opened() -> BaseStorage:
                    return self._open_optuna(create_tables)

                retry = self.retry  # a retry budget that is no number: said first
                if not create_tables:
                    self.check_file()
                self._optuna = retry.call(opened) if wait else opened()
        return self

    def check_file(self) -> None:
        problem = self.missing_file_message()
        if problem:
            raise StudyUnavailable(problem)

    @property
    def optuna(self) -> BaseStorage:
        """Optuna's storage on this URL, opened on first use (without creating anything)."""
        if self._optuna is None:
            self.open()
        assert self._optuna is not None  # open() set it
        return self._optuna

    def _open_optuna(self, create_tables: bool) -> BaseStorage:
        """Optuna's storage on the URL (read-only where self.readonly), retrying each call as
        self.retry says, and making its tables where create_tables."""
        raise NotImplementedError

    @property
    def engine(self) -> Engine | None:
        """The SQL engine that the metrics table and lpstudy's own queries share with Optuna's tables;
        None: this storage is no SQL database."""
        return None

    @property
    def proxy_calls(self) -> ProxyCalls | None:
        """lpstudy's own calls on a storage proxy (lpstudy.db.proxy_calls); None: no proxy."""
        return None

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """fn(*args, **kwargs), retried through an outage."""
        return self.retry.call(fn, *args, **kwargs)

    def close(self) -> None:
        """Let go of what the storage holds (a SQL engine's connections, a proxy's channel); the
        object is not used after. Also `with open_storage(url) as storage:`."""
        with self._opening:
            if not self.closed:
                self.closed = True
                self._release()

    def _release(self) -> None:
        """What close() lets go of; here nothing (a journal file is opened per write)."""

    def __enter__(self) -> StudyStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- across processes --------------------------------------------------------------------------

    def lock(self, name: str = CREATE_LOCK) -> contextlib.AbstractContextManager[None]:
        """Hold the storage's lock called name for the block (lpstudy.db.locking: where the storage
        holds none, the block runs as it is)."""
        return self.locking.hold(name)

    def ask_within_target(self, study: Study, target: int) -> Trial | Literal[Wait.WAIT] | None:
        """A new trial unless the study's n_trials target is taken (lpstudy.db.asking): under the lock
        where one holds across processes, else asked, then given up where it is surplus."""
        return self.locking.ask_within_target(study, target)

    # --- the read side (lpstudy.db.trial_reader's TrialReader): its reads ---------------------------

    def studies(self) -> list[StudyRecord]:
        return self.reads.studies()

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T:
        return self.reads.read(study_name, fn)

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list[Any]]:
        return self.reads.optuna_study(study_name, trial_ids)

    def metrics(self, study_name: str, trial_ids: Sequence[int] | None = None) -> pd.DataFrame:
        return self.reads.metrics(study_name, trial_ids)

    def fingerprint(self, study_name: str) -> tuple[Any, ...] | None:
        return self.reads.fingerprint(study_name)

    def through_optuna(self) -> OptunaReads:
        """The same storage read through Optuna's storage API (the tests compare the two)."""
        return self.reads.through_optuna()

    # --- what a worker asks: here through Optuna's storage API, which every kind answers; a kind that
    # can answer faster (one SQL query, one call on lpstudy's proxy) says so in its module ----------

    def claim_waiting(self, study: Study) -> int | None:
        """Move one WAITING trial of the study to RUNNING for this caller only; its id, or None when
        none waits. Optuna's own pop, the private Study._pop_waiting_trial_id, the first half of
        study.ask() (ask() would then sample a new trial when no cell waits, and a grid worker must
        stop instead); tests/test_optuna_private.py fails if it changes."""
        return optuna_private.pop_waiting_trial_id(study)

    def count_trials(self, study: Study, states: tuple[TrialState, ...]) -> int:
        """How many of the study's trials are in these states."""
        return len(study.get_trials(deepcopy=False, states=states))

    def trial_state(self, study: Study, trial_id: int) -> TrialState:
        """A trial's state now."""
        return optuna_private.study_storage(study).get_trial(trial_id).state

    def for_grid_worker(self, study: Study) -> Study:
        """The study as a grid worker uses it (a grid worker pops waiting cells and never samples;
        SQL: straight on Optuna's RDBStorage, SqlStorage.for_grid_worker); here as it is."""
        return study

    def enqueue_cells(self, study: Study, missing_cells: Callable[[], list[dict[str, Any]]]) -> int:
        """Enqueue a WAITING trial for each parameter dict missing_cells() returns (looked up again
        on a retry); how many."""
        missing = missing_cells()
        for params in missing:
            study.enqueue_trial(params)
        return len(missing)

    def liveness(self, interval_s: int, grace_period_s: int | None, max_retry: int | None) -> Liveness:
        """How this storage notices a dead worker's trial (lpstudy.db.liveness), every interval_s
        seconds; a RUNNING trial without a beat for grace_period_s (default twice the interval) is
        failed and retried with the same parameters up to max_retry times. Here lpstudy's lease."""
        from lpstudy.db.liveness import Lease

        return Lease(self, int(interval_s), _grace(interval_s, grace_period_s), max_retry)

    # --- learning curves: here each evaluation the trial's system attribute lpstudy_metrics:<step> --

    def prepare_curves(self) -> None:
        """Make the place a worker's evaluations go, where it is a table; here nothing."""

    def write_evaluation(self, study_name: str, trial_id: int, trial_number: int, record: MetricRecord) -> None:
        """Store one evaluation of a running trial where this storage keeps curves."""
        self.write_evaluations(study_name, trial_id, trial_number, [record])

    def write_evaluations(self, study_name: str, trial_id: int, trial_number: int,
                          records: list[MetricRecord]) -> None:
        """Store several evaluations of a trial at once (lpstudy.db.metrics_table.evaluation_attribute)."""
        from lpstudy.db.metrics_table import evaluation_attribute

        for record in records:
            self.optuna.set_trial_system_attr(trial_id, *evaluation_attribute(record))

    def delete_curves(self, study_name: str) -> int:
        """Delete the study's evaluations that are not its trials' own (lpstudy delete-study, after
        Optuna's rows); how many rows. Here none: they are the trials' attributes, gone with them."""
        return 0

    def add_finished_trial(self, study_name: str, study_id: int, template: FrozenTrial,
                           records: list[MetricRecord]) -> int:
        """Store a trial that ended elsewhere (a synthetic study's) with its evaluations where this
        storage keeps curves, as a worker's would be; its id. Here the curves go in with the trial,
        as its system attributes (a finished trial takes no more writes)."""
        import copy

        from lpstudy.db.metrics_table import evaluation_attribute

        template = copy.copy(template)
        template.system_attrs = {**template.system_attrs, **dict(evaluation_attribute(r) for r in records)}
        return self.optuna.create_new_trial(study_id, template_trial=template)


def _grace(interval_s: int, grace_period_s: int | None) -> int:
    return int(grace_period_s) if grace_period_s else 2 * int(interval_s)
