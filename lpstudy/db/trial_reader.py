"""One way to read a study database: the reads of the storage object (lpstudy.db.kinds.base),
opened once from the storage URL and passed on.

    reader = open_reader(url)        # lpstudy.db.kinds: the storage at url, read-only, opened on first read
    reader.studies()                 # every study: name, user attributes, direction, trials, best
    reader.read(name, fn)            # fn(tables): the study's rows in Optuna's tables (study_queries.StudyTables)
    reader.optuna_study(name)        # the study and its FrozenTrials (or those of some ids) through Optuna's API
    reader.metrics(name)             # the metrics table's rows of the study (empty without one)
    reader.fingerprint(name)         # what changes whenever the study does, or None
    reader.close()

Every read of a study's trials is one set of queries on Optuna's tables (StudyTables, over
lpstudy.db.study_queries), so the read side builds its frames one way. Where the rows come from is
the storage's business, an object composed into it (`storage.reads`): a SQL storage's (SqlReads:
SQLite, PostgreSQL, MySQL) queries the database itself on its engine; every other's (OptunaReads:
journal, gRPC, and a SQL schema this reader does not know: SchemaMismatch) reads the study through Optuna's storage API and queries a copy of it
in Optuna's own tables, in memory (lpstudy.db.optuna_copy). The readers of the results
(lpstudy.results.reading.frames, status, export, report, the dashboard) never ask which it is. Optuna's
storage is opened only where its API reads: `lpstudy status` on SQL never opens it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import sqlalchemy as sa

from lpstudy.db.urls import first_line, redact
from lpstudy.errors import StudyUnavailable, UserError

if TYPE_CHECKING:
    import pandas as pd
    from optuna.storages import BaseStorage

    from lpstudy.db.study_queries import StudyTables

T = TypeVar("T")


@dataclass
class StudyRecord:
    """One study as its database holds it."""

    name: str
    attrs: dict[str, Any]
    direction: str = "minimize"
    n_trials: int | None = None  # where the database answers it cheaply (SQL)
    best_value: float | None = None  # the best trial's value (lpstudy.design.best), where SQL answers it


class TrialReader(Protocol):
    """What the read side needs of a study storage (see the module): the reads every storage
    object answers (lpstudy.db.kinds.base.StudyStorage)."""

    url: str

    @property
    def optuna(self) -> BaseStorage: ...  # Optuna's storage on the URL (notes are read through its API)

    def through_optuna(self) -> OptunaReads: ...  # the same storage read through Optuna's API

    def studies(self) -> list[StudyRecord]: ...

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T: ...

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list[Any]]: ...

    def metrics(self, study_name: str) -> pd.DataFrame: ...

    def fingerprint(self, study_name: str) -> tuple[Any, ...] | None: ...

    def check_readable(self) -> None: ...

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


class OptunaReads:
    """The reads of a storage through Optuna's storage API (storage.optuna, opened read-only where
    the storage is a reader's): every kind's, until it says otherwise (SqlReads). metrics: where the
    curves' rows come from (None: the trials' system attributes, no table)."""

    def __init__(self, storage: Any, metrics: Callable[..., pd.DataFrame] | None = None) -> None:
        self.storage, self._metrics = storage, metrics

    @property
    def url(self) -> str:
        return str(self.storage.url)

    def through_optuna(self) -> OptunaReads:
        """The same storage read through Optuna's storage API (the tests compare the two)."""
        return self

    def studies(self) -> list[StudyRecord]:
        with reading(self.url):
            frozen = self.storage.optuna.get_all_studies()
        return sorted((StudyRecord(s.study_name, dict(s.user_attrs or {}),
                                   s.directions[0].name if getattr(s, "directions", None) else "minimize")
                       for s in frozen), key=lambda r: r.name)

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T:
        """fn(the study's tables), on a copy of the study read through Optuna's API
        (lpstudy.db.optuna_copy). StudyUnavailable when there is no such study."""
        from lpstudy.db import study_queries as Q
        from lpstudy.db.optuna_copy import copy_study

        frozen, trials = self.optuna_study(study_name)
        engine, sid = copy_study(frozen, trials)
        try:
            with engine.connect() as conn, Q.guarded():
                return fn(Q.StudyTables(conn, sid, lambda trial_ids=None: self.metrics(study_name, trial_ids)))
        finally:
            engine.dispose()

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list[Any]]:
        """(Optuna's FrozenStudy, its FrozenTrials, or only those of trial_ids in their order);
        StudyUnavailable when there is no such study."""
        from lpstudy.db import optuna_private

        storage = self.storage.optuna
        with reading(self.url):
            studies = storage.get_all_studies()
            frozen = next((s for s in studies if s.study_name == study_name), None)
            if frozen is None:
                raise no_such_study(self.url, study_name, [s.study_name for s in studies])
            if trial_ids is not None:
                return frozen, [storage.get_trial(trial_id) for trial_id in trial_ids]
            return frozen, storage.get_all_trials(optuna_private.study_id(frozen), deepcopy=False)

    def metrics(self, study_name: str, trial_ids: Sequence[int] | None = None) -> pd.DataFrame:
        """The curves' rows where a table holds them; else none: they are the trials' system attributes."""
        if self._metrics is not None:
            return self._metrics(study_name, trial_ids)
        from lpstudy.db.metrics_table import empty_metrics

        return empty_metrics()

    def fingerprint(self, study_name: str) -> tuple[Any, ...] | None:
        """None: no cheap summary; a reader rereads on a timer instead."""
        return None


class SqlReads(OptunaReads):
    """The reads of a SQL storage: plain SELECTs on Optuna's tables through its engine (see the
    module), Optuna's API only for a schema this reader does not know."""

    def through_optuna(self) -> OptunaReads:
        """Its trials read through Optuna's API (a copy, as OptunaReads reads), its curves' metrics
        table still from SQL: the tests compare it with its own reads."""
        return OptunaReads(self.storage, metrics=self.metrics)

    def studies(self) -> list[StudyRecord]:
        from lpstudy.db import optuna_tables
        from lpstudy.db import study_queries as Q

        try:
            with reading(self.url), self.storage.engine.connect() as conn:
                names = optuna_tables.study_names(conn)
                attrs = optuna_tables.study_user_attrs(conn) if names else {}
                with Q.guarded():
                    summaries = Q.study_summaries(conn) if names else {}
        except optuna_tables.SchemaMismatch:
            return super().studies()  # a schema this reader does not know: ask Optuna
        return [StudyRecord(name, attrs.get(name, {}), n_trials=summaries.get(name, {}).get("n_trials"),
                            best_value=summaries.get(name, {}).get("best_value")) for name in names]

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T:
        """fn(the study's tables) on one connection; where Optuna's tables are laid out otherwise (a
        future Optuna: SchemaMismatch), on a copy read through Optuna's API. StudyUnavailable when
        there is no such study."""
        from lpstudy.db import optuna_tables
        from lpstudy.db import study_queries as Q

        with reading(self.url), self.storage.engine.connect() as conn:
            try:
                with Q.guarded():
                    sid = Q.study_id(conn, study_name)
                    if sid is None:
                        raise no_such_study(self.url, study_name, optuna_tables.study_names(conn))
                    # the curves on the same connection: one transaction for the whole read
                    return fn(Q.StudyTables(conn, sid, lambda trial_ids=None: self._metrics_on(conn, study_name, trial_ids)))
            except optuna_tables.SchemaMismatch:
                pass
        return super().read(study_name, fn)

    def metrics(self, study_name: str, trial_ids: Sequence[int] | None = None) -> pd.DataFrame:
        return self._metrics_on(self.storage.engine, study_name, trial_ids)

    def _metrics_on(self, bind: Any, study_name: str, trial_ids: Sequence[int] | None = None) -> pd.DataFrame:
        from lpstudy.db.metrics_table import read_metrics

        with reading(self.url):
            return read_metrics(bind, study_name, trial_ids=trial_ids)

    def fingerprint(self, study_name: str) -> tuple[Any, ...] | None:
        """A few counts (lpstudy.db.optuna_tables.study_fingerprint); None for an unknown schema."""
        from lpstudy.db import optuna_tables
        from lpstudy.db.metrics_table import METRICS_TABLE

        with reading(self.url), self.storage.engine.connect() as conn:
            metrics = METRICS_TABLE if sa.inspect(conn).has_table(METRICS_TABLE) else None
            try:
                fingerprint = optuna_tables.study_fingerprint(conn, study_name, metrics)
            except optuna_tables.SchemaMismatch:
                return None
            if fingerprint is None:
                raise no_such_study(self.url, study_name, optuna_tables.study_names(conn))
            return fingerprint
