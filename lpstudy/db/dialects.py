"""What the SQL databases say differently, each said once, with SQLAlchemy's own means: a construct
compiled per dialect (`@compiles`), SQLite's form the default, PostgreSQL's and MySQL's beside it.
lpstudy's reads (lpstudy.db.study_queries) are SQL text; `sql_of` writes a construct into that text
in the connection's dialect.

    SecondsBetween(start, end)      the seconds from one timestamp column to another
    JsonNumber(column)              the float a JSON text holds when it is a JSON number, else NULL
    LastEvaluationJoin(trials, l)   each trial joined to its last evaluation (Optuna's
                                    trial_intermediate_values row with the highest step)

The read indexes (lpstudy.db.read_indexes) are SQLAlchemy `Index` objects, created through
`CreateReadIndex`: PostgreSQL carries the read columns in INCLUDE, SQLite (which has no INCLUDE)
as the last key columns, and MySQL gets none (NoReadIndexes).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, FunctionElement


def sql_of(conn: Connection, element: ClauseElement) -> str:
    """The element as SQL text in the connection's dialect."""
    return str(element.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))


def column(name: str) -> ClauseElement:
    """A column named as the SQL text around it names it ("t.datetime_start")."""
    return sa.literal_column(name)


class SecondsBetween(FunctionElement[float]):
    """The seconds from column `start` to column `end` (a float)."""

    type = sa.Float()
    name = "seconds_between"
    inherit_cache = True


@compiles(SecondsBetween)
def _seconds_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    start, end = (compiler.process(c, **kw) for c in element.clauses)
    return f"(julianday({end}) - julianday({start})) * 86400.0"


@compiles(SecondsBetween, "postgresql")
def _seconds_postgresql(element: Any, compiler: Any, **kw: Any) -> str:
    start, end = (compiler.process(c, **kw) for c in element.clauses)
    return f"EXTRACT(EPOCH FROM ({end} - {start}))"


@compiles(SecondsBetween, "mysql")
def _seconds_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    start, end = (compiler.process(c, **kw) for c in element.clauses)
    return f"TIMESTAMPDIFF(MICROSECOND, {start}, {end}) / 1000000.0"


class JsonNumber(FunctionElement[float]):
    """The float a JSON text holds when it is a JSON number, else NULL (null, true, a string, and
    Python's NaN and ±Infinity, which are no JSON numbers)."""

    type = sa.Float()
    name = "json_number"
    inherit_cache = True


@compiles(JsonNumber)
def _json_number_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    (text,) = (compiler.process(c, **kw) for c in element.clauses)
    return (f"(CASE WHEN json_valid({text}) THEN CASE WHEN json_type({text}) IN ('integer', 'real') "
            f"THEN CAST({text} AS REAL) END END)")


@compiles(JsonNumber, "postgresql")
def _json_number_postgresql(element: Any, compiler: Any, **kw: Any) -> str:
    """A JSON text that starts with a digit, or a minus and a digit, is a number (no other JSON value
    does), then a cast (a cast of anything else would fail the query)."""
    (text,) = (compiler.process(c, **kw) for c in element.clauses)
    return f"(CASE WHEN {text} ~ '^-?[0-9]' THEN CAST({text} AS double precision) END)"


@compiles(JsonNumber, "mysql")
def _json_number_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    (text,) = (compiler.process(c, **kw) for c in element.clauses)
    return (f"(CASE WHEN JSON_VALID({text}) AND JSON_TYPE({text}) IN "
            f"('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') THEN {text} + 0.0 END)")


class LastEvaluationJoin(ClauseElement):
    """A JOIN of each trial of the alias `trials` to its last evaluation, the alias `last` with the
    columns step, intermediate_value and intermediate_value_type of Optuna's
    trial_intermediate_values row with the trial's highest step; trials without one are left out.
    Each trial's row is found through the (trial_id, step) index (the newest entry of the trial),
    so the work is one index lookup per trial read, not a GROUP BY over every evaluation of the
    study."""

    inherit_cache = False

    def __init__(self, trials: str = "t", last: str = "l") -> None:
        self.trials, self.last = trials, last


@compiles(LastEvaluationJoin)
def _last_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    """A correlated max(step), which SQLite answers from the index."""
    t, last = element.trials, element.last
    return (f"JOIN trial_intermediate_values {last} ON {last}.trial_id = {t}.trial_id AND {last}.step = "
            f"(SELECT max(e.step) FROM trial_intermediate_values e WHERE e.trial_id = {t}.trial_id)")


@compiles(LastEvaluationJoin, "postgresql")
@compiles(LastEvaluationJoin, "mysql")
def _last_lateral(element: Any, compiler: Any, **kw: Any) -> str:
    """A LATERAL subquery with ORDER BY step DESC LIMIT 1 (PostgreSQL, MySQL 8)."""
    t, last = element.trials, element.last
    return (f"JOIN LATERAL (SELECT e.step, e.intermediate_value, e.intermediate_value_type "
            f"FROM trial_intermediate_values e WHERE e.trial_id = {t}.trial_id "
            f"ORDER BY e.step DESC LIMIT 1) {last} ON TRUE")


# --- lpstudy's read indexes -------------------------------------------------------------------

class NoReadIndexes(Exception):
    """The database gets none of lpstudy's read indexes (MySQL: its text keys need a prefix length,
    and it has no partial index); it reads the same, only slower."""


CARRIED = "lpstudy_carried"  # Index.info: the columns an index carries for index-only reads


def read_index(name: str, table: str, columns: tuple[str, ...], carried: tuple[str, ...] = (),
               where: str | None = None) -> sa.Index:
    """The Index `name` on Optuna's `table`: keyed on `columns`, carrying `carried` for index-only
    reads, partial where `where` (SQL text) holds."""
    cols: dict[str, sa.Column[Any]] = {c: sa.Column(c, quote=False) for c in (*columns, *carried)}  # as Optuna names them
    sa.Table(table, sa.MetaData(), *cols.values())
    condition = sa.text(where) if where else None
    return sa.Index(name, *(cols[c] for c in columns), postgresql_include=list(carried),
                    postgresql_where=condition, sqlite_where=condition, info={CARRIED: tuple(carried)})


class CreateReadIndex(sa.schema.CreateIndex):
    """CREATE INDEX IF NOT EXISTS for a read_index."""

    inherit_cache = False

    def __init__(self, index: sa.Index) -> None:
        super().__init__(index, if_not_exists=True)


@compiles(CreateReadIndex)
def _create_read_index(create: Any, compiler: Any, **kw: Any) -> str:
    """PostgreSQL: the carried columns in INCLUDE (postgresql_include)."""
    return str(compiler.visit_create_index(create, **kw))


@compiles(CreateReadIndex, "sqlite")
def _create_read_index_sqlite(create: Any, compiler: Any, **kw: Any) -> str:
    """SQLite has no INCLUDE: the carried columns become the last key columns, which SQLite reads as
    a covering index all the same."""
    index = create.element
    carried = [index.table.c[c] for c in index.info.get(CARRIED, ())]
    if not carried:
        return str(compiler.visit_create_index(create, **kw))
    wider = sa.Index(None, *index.expressions, *carried, sqlite_where=index.dialect_options["sqlite"]["where"])
    wider.name = index.name  # not sa.Index(index.name, ...): the table holds one index of that name
    return str(compiler.visit_create_index(sa.schema.CreateIndex(wider, if_not_exists=True), **kw))


@compiles(CreateReadIndex, "mysql")
def _create_read_index_mysql(create: Any, compiler: Any, **kw: Any) -> str:
    raise NoReadIndexes(create.element.name)
