"""One way to read a study database: the reads of the storage object (lpstudy.db.kinds.base),
opened once from the storage URL and passed on.

    reader = open_reader(url)        # lpstudy.db.kinds: the storage at url, read-only, opened on first read
    reader.studies()                 # every study: name, user attributes, direction, trials, best
    reader.read(name, fn)            # fn(tables): the study's rows in Optuna's tables (StudyTables)
    reader.optuna_study(name)        # the study and its FrozenTrials (or those of some ids) through Optuna's API
    reader.metrics(name)             # the metrics table's rows of the study (empty without one)
    reader.fingerprint(name)         # what changes whenever the study does, or None
    reader.close()

Every read of a study's trials is one set of queries on Optuna's tables (StudyTables, over
lpstudy.db.study_queries), so the read side builds its frames one way. Where the rows come from is
the storage's business: a SQL storage (ReadsSql: SQLite, PostgreSQL, MySQL) queries the database
itself on its engine; every other (ReadsThroughOptuna: journal, gRPC, and a SQL schema this reader
does not know: SchemaMismatch) reads the study through Optuna's storage API and queries a copy of it
in Optuna's own tables, in memory (lpstudy.db.optuna_copy). The readers of the results
(lpstudy.results.frames, status, export, report, the dashboard) never ask which it is. Optuna's
storage is opened only where its API reads: `lpstudy status` on SQL never opens it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import sqlalchemy as sa

from lpstudy.db.urls import first_line, redact
from lpstudy.errors import StudyUnavailable, UserError

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy.engine import Connection, Engine

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
    """What the read side needs of a study storage (see the module): the reads every storage
    object answers (lpstudy.db.kinds.base.StudyStorage)."""

    url: str

    def studies(self) -> list[StudyRecord]: ...

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T: ...

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list]: ...

    def metrics(self, study_name: str) -> pd.DataFrame: ...

    def fingerprint(self, study_name: str) -> tuple | None: ...

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


class StudyTables:
    """One study's rows in Optuna's tables, for one read: each method one query of
    lpstudy.db.study_queries (see there) on this study, never a connection handed out."""

    def __init__(self, conn: Connection, sid: int, metrics: Callable[..., pd.DataFrame]) -> None:
        self._conn, self._sid, self._metrics = conn, sid, metrics

    def header(self) -> tuple[list[str], dict[str, Any]]:
        """(its directions, its user attributes)."""
        from lpstudy.db import study_queries as Q

        return Q.study_header(self._conn, self._sid)

    def trial_rows(self, attr_keys, ids=None, state=None) -> pd.DataFrame:
        from lpstudy.db import study_queries as Q

        return Q.trial_rows(self._conn, self._sid, attr_keys, ids=ids, state=state)

    def param_rows(self, ids=None, state=None) -> pd.DataFrame:
        from lpstudy.db import study_queries as Q

        return Q.param_rows(self._conn, self._sid, ids=ids, state=state)

    def trial_ids_with_user_attr(self, key: str, state: str | None = None) -> list[int]:
        from lpstudy.db import study_queries as Q

        return Q.trial_ids_with_user_attr(self._conn, self._sid, key, state=state)

    def system_attr_rows(self, keys_like, ids=None, state=None) -> list[tuple[int, str, str]]:
        from lpstudy.db import study_queries as Q

        return Q.system_attr_rows(self._conn, self._sid, keys_like, ids=ids, state=state)

    def last_evaluations(self, ids=None, state=None) -> pd.DataFrame:
        from lpstudy.db import study_queries as Q

        return Q.last_evaluations(self._conn, self._sid, ids=ids, state=state)

    def intermediate_rows(self, ids=None) -> pd.DataFrame:
        from lpstudy.db import study_queries as Q

        return Q.intermediate_rows(self._conn, self._sid, ids=ids)

    def metrics(self, trial_ids=None) -> pd.DataFrame:
        """The metrics table's rows of the study (or of trial_ids); empty where there is none."""
        return self._metrics(trial_ids=trial_ids)

    def trial_ids_of(self, numbers) -> dict[int, int]:
        from lpstudy.db import study_queries as Q

        return Q.trial_ids_of(self._conn, self._sid, numbers)

    def state_counts(self) -> dict[str, int]:
        from lpstudy.db import study_queries as Q

        return Q.state_counts(self._conn, self._sid)

    def ranked_trial_ids(self, k: int | None = 1) -> list[tuple[int, int, float]]:
        from lpstudy.db import study_queries as Q

        return Q.ranked_trial_ids(self._conn, self._sid, k)

    def trial_ids_in_state(self, state: str) -> list[int]:
        from lpstudy.db import study_queries as Q

        return Q.trial_ids_in_state(self._conn, self._sid, state)

    def user_attributes_of(self, ids) -> dict[int, dict[str, Any]]:
        from lpstudy.db import study_queries as Q

        return Q.user_attributes_of(self._conn, ids)

    def diverged_count(self) -> int:
        from lpstudy.db import study_queries as Q

        return Q.diverged_count(self._conn, self._sid)

    def mean_complete_seconds(self) -> float | None:
        from lpstudy.db import study_queries as Q

        return Q.mean_complete_seconds(self._conn, self._sid)

    def compute_sums(self):
        from lpstudy.db import study_queries as Q

        return Q.compute_sums(self._conn, self._sid)

    def count_and_new(self, top: int) -> tuple[int, int]:
        from lpstudy.db import study_queries as Q

        return Q.count_and_new(self._conn, self._sid, top)

    def trial_ids_above(self, top: int) -> list[int]:
        from lpstudy.db import study_queries as Q

        return Q.trial_ids_above(self._conn, self._sid, top)

    @property
    def study_id(self) -> int:
        """The study's id in its storage (a copy keeps it): a new id is a study made again."""
        return self._sid


class ReadsThroughOptuna:
    """The reads of a storage through Optuna's storage API (self.optuna, opened read-only where the
    storage is a reader's): every kind's, until it says otherwise (ReadsSql)."""

    url: str
    optuna: Any

    def through_optuna(self) -> ReadsThroughOptuna:
        """The same storage read through Optuna's storage API (the tests compare the two)."""
        return self

    def studies(self) -> list[StudyRecord]:
        with reading(self.url):
            frozen = self.optuna.get_all_studies()
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
                return fn(StudyTables(conn, sid, lambda trial_ids=None: self.metrics(study_name, trial_ids)))
        finally:
            engine.dispose()

    def optuna_study(self, study_name: str, trial_ids: list[int] | None = None) -> tuple[Any, list]:
        """(Optuna's FrozenStudy, its FrozenTrials, or only those of trial_ids in their order);
        StudyUnavailable when there is no such study."""
        storage = self.optuna
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


class ReadsSql(ReadsThroughOptuna):
    """The reads of a SQL storage: plain SELECTs on Optuna's tables through its engine (see the
    module), Optuna's API only for a schema this reader does not know."""

    engine: Engine

    def through_optuna(self) -> ThroughOptuna:
        return ThroughOptuna(self)

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

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T:
        """fn(the study's tables) on one connection; where Optuna's tables are laid out otherwise (a
        future Optuna: SchemaMismatch), on a copy read through Optuna's API. StudyUnavailable when
        there is no such study."""
        from lpstudy.db import optuna_tables
        from lpstudy.db import study_queries as Q

        with reading(self.url), self.engine.connect() as conn:
            try:
                with Q.guarded():
                    sid = Q.study_id(conn, study_name)
                    if sid is None:
                        raise no_such_study(self.url, study_name, optuna_tables.study_names(conn))
                    return fn(StudyTables(conn, sid, lambda trial_ids=None: self.metrics(study_name, trial_ids)))
            except optuna_tables.SchemaMismatch:
                pass
        return super().read(study_name, fn)

    def metrics(self, study_name: str, trial_ids=None) -> pd.DataFrame:
        from lpstudy.db.metrics_table import read_metrics

        with reading(self.url):
            return read_metrics(self.engine, study_name, trial_ids=trial_ids)

    def fingerprint(self, study_name: str) -> tuple | None:
        """A few counts (lpstudy.db.optuna_tables.study_fingerprint); None for an unknown schema."""
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


class ThroughOptuna:
    """A SQL storage that reads a study's trials through Optuna's API (a copy, as ReadsThroughOptuna reads),
    its curves' metrics table still from SQL: the tests compare it with its own reads."""

    def __init__(self, reader: ReadsSql) -> None:
        self._reader = reader

    def read(self, study_name: str, fn: Callable[[StudyTables], T]) -> T:
        return ReadsThroughOptuna.read(self._reader, study_name, fn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)
