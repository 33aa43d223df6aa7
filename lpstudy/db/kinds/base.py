"""What every kind of storage answers (see the package's docstring for the kinds).

A kind is one object for all the URLs of its scheme; each question takes the URL. Telling a URL's
kind imports neither Optuna nor a database driver (the command line's help and checks stay quick);
opening a storage does. The defaults here
are those of a server that is not a SQL database (no local file, no engine, no lock); the shared
behaviour of the SQL kinds is in `sql`, that of the kinds kept in a local file in `files`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lpstudy.db.urls import redact
from lpstudy.errors import StudyUnavailable, UserError

if TYPE_CHECKING:  # Optuna and the retries load when a storage is opened: `lpstudy --help` stays quick
    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import TrialState
    from sqlalchemy.engine import Engine

    from lpstudy.db.liveness import Liveness
    from lpstudy.db.optuna_storage import StudyStorage
    from lpstudy.db.outages import RetryPolicy
    from lpstudy.db.proxy_calls import ProxyCalls
    from lpstudy.db.trial_reader import TrialReader
    from lpstudy.training.metrics import MetricRecord

CONNECT_TIMEOUT_S = 5  # an unreachable server fails within this many seconds
CREATE_LOCK = "lpstudy:create"  # the lock `create` and `replicate` hold (lpstudy.db.locks)


class StorageKind:
    """One kind of storage: its URL rules, how Optuna's storage is opened on it, its locks, how a
    dead worker is noticed, where checkpoints and learning curves go. What differs between kinds is
    a method each kind answers (or an object it returns), never a flag a caller reads."""

    name: str = ""  # as the errors and `StudyStorage.kind.name` say it: sqlite, postgresql, ...
    url_form: str | None = None  # how its URL looks, in the list of forms an unknown URL is told

    # --- URL rules ---------------------------------------------------------------------------------

    def owns(self, url: str) -> bool:
        """Whether url is of this kind (by its scheme, here the kind's name in any case); says
        nothing about whether it can be used."""
        return "://" in url and url.split("://", 1)[0].lower() == self.name

    def validate(self, url: str) -> None:
        """UserError, one line, unless url can be used (a port that is a number, a file named)."""

    def local_file(self, url: str, creating: bool = False) -> Path | None:
        """The file the data is kept in; None for a server."""
        return None

    # Files the database keeps beside its local file, FILE<suffix>: removed with it by a failed create.
    companions: tuple[str, ...] = ()

    def readonly_url(self, url: str) -> str:
        """A URL that cannot write, where the database allows it."""
        return url

    def missing_file_message(self, url: str) -> str | None:
        """Why the URL cannot be read (no such file, a folder, not a database), or None."""
        return None

    def prepare_to_create(self, url: str) -> Path | None:
        """Before a study is created: make the folder of its file; the folder if it was made now."""
        return None

    # --- opening -----------------------------------------------------------------------------------

    def engine_options(self, url: str, readonly: bool = False) -> dict[str, Any]:
        """create_engine's options, the same for Optuna's RDBStorage and lpstudy's own reads."""
        raise UserError(f"{redact(url)} is not a SQL database")

    def engine(self, url: str, readonly: bool = False, check: bool = False) -> Engine:
        """A SQLAlchemy engine on the database (lpstudy.db.engines.make_engine says the options)."""
        raise UserError(f"{redact(url)} is not a SQL database")

    def open_optuna(self, url: str, readonly: bool, create_tables: bool,
                    policy: RetryPolicy) -> tuple[BaseStorage, Engine | None]:
        """Optuna's storage on url and, where SQL is at hand, the engine the metrics table shares
        (lpstudy.db.optuna_storage.open_storage says what readonly and create_tables mean)."""
        raise NotImplementedError

    def proxy_calls(self, url: str, policy: RetryPolicy) -> ProxyCalls | None:
        """lpstudy's own calls on a storage proxy at url (lpstudy.db.proxy_calls), retried as
        policy says; None for the kinds that are no proxy."""
        return None

    def reader(self, url: str) -> TrialReader:
        """The reader of the studies at url (lpstudy.db.trial_reader): here Optuna's storage API."""
        from lpstudy.db.trial_reader import OptunaReader

        return OptunaReader(url, self)

    # --- across processes --------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, url: str, name: str = CREATE_LOCK) -> Iterator[None]:
        """Hold the storage's lock called name for the block (lpstudy.db.locks); here: none (a
        LockingKind holds one)."""
        yield

    def ask_within_target(self, storage: StudyStorage, study: optuna.Study, target: int):
        """A new trial within the target (lpstudy.db.asking): without a lock, asked, then given up
        where it is surplus."""
        from lpstudy.db.asking import WAIT, ask_counted, give_up_surplus

        trial = ask_counted(study, target)
        return trial if trial is None or trial is WAIT else give_up_surplus(study, trial, target)

    def default_artifacts(self, url: str) -> str | None:
        """Where trials keep their checkpoints when no --artifacts is given; None: nowhere."""
        return None

    # --- before a command uses it ------------------------------------------------------------------

    def check_readable(self, url: str) -> None:
        """StudyUnavailable (one line) now, rather than an error page later, where the storage at url
        cannot be read: a mistyped file, and where a server is reached directly, a refused login."""
        problem = self.missing_file_message(url)
        if problem:
            raise StudyUnavailable(problem)

    def check_proxy_target(self, url: str) -> None:
        """UserError unless `lpstudy storage-proxy` can serve the storage at url (a SQL database)."""
        raise UserError(f"the storage proxy serves a SQL database, not {self.name} storage {redact(url)!r}; "
                        "pass --storage postgresql+psycopg://USER:PASSWORD@HOST/DB")

    # --- what a worker asks (StudyStorage's methods of the same names call these) ------------------
    # Here through Optuna's storage API, which every kind answers; a kind that can answer faster
    # (one SQL query, one call on lpstudy's proxy) says so in its module.

    def claim_waiting(self, storage: StudyStorage, study: optuna.Study) -> int | None:
        """Move one WAITING trial of the study to RUNNING for this caller only; its id, or None when
        none waits. Optuna's own pop, the private Study._pop_waiting_trial_id, the first half of
        study.ask() (ask() would then sample a new trial when no cell waits, and a grid worker must
        stop instead); tests/test_optuna_private.py fails if it changes."""
        return study._pop_waiting_trial_id()

    def count_trials(self, storage: StudyStorage, study: optuna.Study, states: tuple[TrialState, ...]) -> int:
        """How many of the study's trials are in these states."""
        return len(study.get_trials(deepcopy=False, states=states))

    def trial_state(self, storage: StudyStorage, study: optuna.Study, trial_id: int) -> TrialState:
        """The trial's state now."""
        return study._storage.get_trial(trial_id).state

    def for_grid_worker(self, storage: StudyStorage, study: optuna.Study) -> optuna.Study:
        """The study as a grid worker uses it (see lpstudy.study.claims.for_grid_worker)."""
        return study

    def enqueue_cells(self, storage: StudyStorage, study: optuna.Study,
                      missing_cells: Callable[[], list[dict[str, Any]]]) -> int:
        """Enqueue a WAITING trial for each of missing_cells()'s parameters; how many."""
        missing = missing_cells()
        for params in missing:
            study.enqueue_trial(params)
        return len(missing)

    def liveness(self, storage: StudyStorage, interval_s: int, grace_period_s: int,
                 max_retry: int | None) -> Liveness:
        """How a dead worker's trial is noticed (lpstudy.db.liveness): here lpstudy's lease."""
        from lpstudy.db.liveness import Lease

        return Lease(storage, interval_s, grace_period_s, max_retry)

    def close(self, storage: StudyStorage) -> None:
        """Let go of what an open storage holds; here nothing (a journal file is opened per write)."""

    # --- learning curves ---------------------------------------------------------------------------

    def prepare_curves(self, storage: StudyStorage) -> None:
        """Make the place a worker's evaluations go (the SQL kinds' metrics table); here nothing."""

    def write_evaluations(self, storage: StudyStorage, study_name: str, trial_id: int, trial_number: int,
                          records: list[MetricRecord]) -> None:
        """Store evaluations of a trial: here each as its system attribute lpstudy_metrics:<step>
        (lpstudy.db.metrics_table.evaluation_attribute)."""
        from lpstudy.db.metrics_table import evaluation_attribute

        for record in records:
            storage.optuna.set_trial_system_attr(trial_id, *evaluation_attribute(record))

    def delete_curves(self, storage: StudyStorage, study_name: str) -> int:
        """Delete a study's evaluations that are not its trials' own (lpstudy delete-study, after
        Optuna's rows); how many rows. Here none: the curves are the trials' system attributes,
        deleted with the trials."""
        return 0

    def add_finished_trial(self, storage: StudyStorage, study_name: str, study_id: int, template: Any,
                           records: list[MetricRecord]) -> int:
        """Store a trial that ended elsewhere (a FrozenTrial: a synthetic study's, an import) with its
        evaluations where this kind keeps curves; its id. Here the curves go in with the trial, as its
        system attributes (a finished trial takes no more writes)."""
        import copy

        from lpstudy.db.metrics_table import evaluation_attribute

        template = copy.copy(template)
        template.system_attrs = {**template.system_attrs, **dict(evaluation_attribute(r) for r in records)}
        return storage.optuna.create_new_trial(study_id, template_trial=template)

    def __repr__(self) -> str:
        return f"<storage kind {self.name}>"


class LockingKind(StorageKind):
    """A kind whose `lock` holds across processes (a file's flock, PostgreSQL's advisory lock): the
    n_trials target is counted and a new trial asked under it."""

    def ask_within_target(self, storage: StudyStorage, study: optuna.Study, target: int):
        from lpstudy.db.asking import ask_counted, ask_lock_name

        with self.lock(storage.url, ask_lock_name(study.study_name)):
            return ask_counted(study, target)
