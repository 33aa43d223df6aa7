"""The indexes lpstudy adds to Optuna's tables for its readers (docs/scale-reading.md, "Indexes").

Optuna's trial_user_attributes is indexed by (trial_id, key) only: a reader that wants a few
attributes of every trial of a study (`lpstudy status` pivots steps, wall_time_s, max_steps and
device; the best-trial rule joins `diverged`) walks every attribute row of the study. An index on
(key, trial_id) reads only the rows of those keys: at 100,000 trials, 400,000 index entries
instead of 3.3 million rows for status. Optuna's trial_values is indexed by (trial_id, objective)
only: the best trial (ORDER BY value, number LIMIT 1, `status` and `export`) sorted every value of
the study; an index on (objective, value) walks the values from the lowest and stops at the first
trial that may be best (0.2 ms instead of 2 s at 100,000 trials on a loaded machine). Both are
safe additions: Optuna neither reads nor writes it
by name, its migrations do not touch them, and a database without them reads the same, only slower.

Made by whoever creates tables (`lpstudy create`, `replicate`, workers: beside the metrics table,
lpstudy.db.metrics_table.ensure_metrics_table) when it is missing; building it on a big existing
database takes a few seconds once (PostgreSQL holds writes to the table meanwhile).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lpstudy.db.kinds.index_sql import create_index_sql

# name: (Optuna's table, columns)
READ_INDEXES: dict[str, tuple[str, tuple[str, ...]]] = {
    "lpstudy_trial_user_attributes_key": ("trial_user_attributes", ("key", "trial_id")),
    "lpstudy_trial_values_value": ("trial_values", ("objective", "value")),
}


def ensure_read_indexes(engine: Engine) -> None:
    """Create the missing READ_INDEXES on the Optuna tables the database has; safe to call from many
    workers at once (one that lost the race to create an index finds it made)."""
    for name, (table, columns) in READ_INDEXES.items():
        if not sa.inspect(engine).has_table(table) or _has_index(engine, table, name):
            continue  # checked first: CREATE INDEX IF NOT EXISTS would still lock the table on PostgreSQL
        try:
            with engine.begin() as conn:
                statement = create_index_sql(conn, name, table, columns)
                if statement is None:
                    return
                conn.exec_driver_sql(statement)
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            if not _has_index(engine, table, name):  # not a race with another worker that made it
                raise


def _has_index(engine: Engine, table: str, name: str) -> bool:
    return any(index["name"] == name for index in sa.inspect(engine).get_indexes(table))
