"""One way to read a study database: a TrialReader, opened once from the storage URL and passed on.

    reader = open_reader(url)        # lpstudy.db.kinds: the kind of url says which reader
    reader.studies()                 # every study: name, user attributes, direction, trials, best
    reader.answer(name, read)        # read(conn, engine, study_id) on Optuna's SQL tables, or None
    reader.optuna_study(name)        # the study and its FrozenTrials (or those of some ids) through Optuna's API
    reader.metrics(name)             # the metrics table's rows of the study (empty without one)
    reader.fingerprint(name)         # what changes whenever the study does, or None
    reader.close()

SqlReader (SQLite, PostgreSQL, MySQL) answers from Optuna's tables with plain SELECTs
(lpstudy.db.optuna_tables, lpstudy.db.study_queries), a read-only engine opened once; where the
tables are laid out otherwise (a future Optuna: SchemaMismatch), it answers as OptunaReader does.
OptunaReader (journal, gRPC) reads through Optuna's storage API, opened read-only once; it answers
no SQL (answer: None), so that lpstudy.results.frames builds the same frames from FrozenTrials.
A new kind of storage names its reader in its module (StorageKind.reader); the readers of the
results (lpstudy.results.frames, status, export, report, the dashboard) never ask which it is.
Optuna's storage is opened only where its API reads: `lpstudy status` on SQL never opens it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import sqlalchemy as sa

from lpstudy.db.urls import first_line, redact
from lpstudy.errors import StudyUnavailable, UserError

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy.engine import Connection, Engine

    from lpstudy.db.kinds.base import StorageKind

T = TypeVar("T")


@dataclass
class StudyRecord:
    """One study as its database holds it."""

    name: str
    attrs: dict[str, Any]
    direction: str = "minimize"
    n_trials: int | None = None  # where the database answers it cheaply (SQL)
    best_value: float | None = None  # the best trial's value (lpstudy.study.best), where SQL answers it


class TrialReader(Protocol):
    """What every reader of a study database answers (see the module)."""

    url: str

    def studies(self) -> list[StudyRecord]: ...

    def answer(self, study_name: str, read: Callable[[Connection, Engine, int], T]) -> T | None: ...

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list]: ...

    def metrics(self, study_name: str) -> pd.DataFrame: ...

    def fingerprint(self, study_name: str) -> tuple | None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def reading(url: str) -> Iterator[None]:
    """Turn a database error during a read into StudyUnavailable (one line, no password)."""
    try:
        yield
    except UserError:
        raise
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        from lpstudy.db.outages import unreachable_or_unavailable  # a lost connection: exit status 75

        raise unreachable_or_unavailable(exc)(
            f"cannot read the study database at {redact(url)}: {first_line(exc, url)}") from None


def no_such_study(url: str, study_name: str, names: list[str]) -> StudyUnavailable:
    """One line: the closest names ("did you mean ...?") or how to create it (lpstudy.names)."""
    from lpstudy.names import no_such_study as message

    return StudyUnavailable(message(study_name, redact(url), names))


class OptunaReader:
    """Reads through Optuna's storage API (lpstudy.db.optuna_storage.open_storage, read-only)."""

    def __init__(self, url: str, kind: StorageKind) -> None:
        self.url, self.kind = url, kind
        self._optuna = None
        self._opening = threading.Lock()  # a dashboard's sessions share one reader

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {redact(self.url)}>"

    def _storage(self):
        with self._opening:
            if self._optuna is None:  # as lpstudy.db.optuna_storage.open_storage(url, readonly=True) opens it
                from lpstudy.db.outages import RetryPolicy, quiet_optuna

                quiet_optuna()
                problem = self.kind.missing_file_message(self.url)
                if problem:
                    raise StudyUnavailable(problem)
                self._optuna, _ = self.kind.open_optuna(self.url, readonly=True, create_tables=False,
                                                        policy=RetryPolicy(self.url))
            return self._optuna

    def studies(self) -> list[StudyRecord]:
        with reading(self.url):
            frozen = self._storage().get_all_studies()
        return sorted((StudyRecord(s.study_name, dict(s.user_attrs or {}),
                                   s.directions[0].name if getattr(s, "directions", None) else "minimize")
                       for s in frozen), key=lambda r: r.name)

    def answer(self, study_name: str, read: Callable[..., T]) -> T | None:
        """None: this reader has no SQL; the caller reads through optuna_study."""
        return None

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list]:
        """(Optuna's FrozenStudy, its FrozenTrials, or only those of trial_ids in their order);
        StudyUnavailable when there is no such study."""
        storage = self._storage()
        with reading(self.url):
            studies = storage.get_all_studies()
            frozen = next((s for s in studies if s.study_name == study_name), None)
            if frozen is None:
                raise no_such_study(self.url, study_name, [s.study_name for s in studies])
            if trial_ids is not None:
                return frozen, [storage.get_trial(trial_id) for trial_id in trial_ids]
            return frozen, storage.get_all_trials(frozen._study_id, deepcopy=False)

    def metrics(self, study_name: str, trial_ids=None) -> pd.DataFrame:
        """No metrics table: the curves are in the trials' system attributes."""
        from lpstudy.db.metrics_table import empty_metrics

        return empty_metrics()

    def fingerprint(self, study_name: str) -> tuple | None:
        """None: no cheap summary; a reader rereads on a timer instead."""
        return None

    def close(self) -> None:
        engine = getattr(self._optuna, "engine", None)
        if engine is not None:
            engine.dispose()
        self._optuna = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SqlReader(OptunaReader):
    """Reads Optuna's SQL tables with plain SELECTs on a read-only engine (see the module)."""

    def __init__(self, url: str, kind: StorageKind) -> None:
        super().__init__(url, kind)
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        """The read-only engine, made (and reached: StudyUnavailable otherwise) on first use."""
        with self._opening:
            if self._engine is None:
                self._engine = self.kind.engine(self.url, readonly=True, check=True)
            return self._engine

    def studies(self) -> list[StudyRecord]:
        from lpstudy.db import optuna_tables
        from lpstudy.db import study_queries as Q

        try:
            with reading(self.url), self.engine.connect() as conn:
                names = optuna_tables.study_names(conn)
                attrs = optuna_tables.study_user_attrs(conn) if names else {}
                with Q.guarded():
                    summaries = Q.study_summaries(conn) if names else {}
        except optuna_tables.SchemaMismatch:
            return super().studies()  # a schema this reader does not know: ask Optuna
        return [StudyRecord(name, attrs.get(name, {}), n_trials=summaries.get(name, {}).get("n_trials"),
                            best_value=summaries.get(name, {}).get("best_value")) for name in names]

    def answer(self, study_name: str, read: Callable[..., T]) -> T | None:
        """read(conn, engine, study_id) on the read-only connection; None where Optuna's tables are
        laid out otherwise (then read through optuna_study). StudyUnavailable when there is no such
        study."""
        from lpstudy.db import optuna_tables
        from lpstudy.db import study_queries as Q

        with reading(self.url), self.engine.connect() as conn:
            try:
                with Q.guarded():
                    sid = Q.study_id(conn, study_name)
                    if sid is None:
                        raise no_such_study(self.url, study_name, optuna_tables.study_names(conn))
                    return read(conn, self.engine, sid)
            except optuna_tables.SchemaMismatch:
                return None

    def metrics(self, study_name: str, trial_ids=None) -> pd.DataFrame:
        from lpstudy.db.metrics_table import read_metrics

        with reading(self.url):
            return read_metrics(self.engine, study_name, trial_ids=trial_ids)

    def fingerprint(self, study_name: str) -> tuple | None:
        """A few counts (lpstudy.db.optuna_tables.study_fingerprint); None for an unknown schema."""
        import sqlalchemy as sa

        from lpstudy.db import optuna_tables
        from lpstudy.db.metrics_table import METRICS_TABLE

        with reading(self.url), self.engine.connect() as conn:
            metrics = METRICS_TABLE if sa.inspect(conn).has_table(METRICS_TABLE) else None
            try:
                fingerprint = optuna_tables.study_fingerprint(conn, study_name, metrics)
            except optuna_tables.SchemaMismatch:
                return None
            if fingerprint is None:
                raise no_such_study(self.url, study_name, optuna_tables.study_names(conn))
            return fingerprint

    def close(self) -> None:
        super().close()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
