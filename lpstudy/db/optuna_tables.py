"""Optuna's SQL tables, read-only: the studies, their user attributes and a study's fingerprint.

Optuna's RDBStorage.get_all_trials builds an ORM object per row (about 4 s for 1,000 trials with 50
evaluations each on a 2-core machine); lpstudy reads Optuna's schema (stable since Optuna 3:
studies, study_directions, study_user_attributes, trials, trial_values, trial_params,
trial_user_attributes, trial_system_attributes, trial_intermediate_values) with plain SELECTs here
and in lpstudy.db.study_queries. When the schema does not match (a future Optuna), SchemaMismatch,
and lpstudy.results.reading.frames falls back to Optuna's own API.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lpstudy.values import json_or_text


class SchemaMismatch(Exception):
    """Optuna's tables are not what this module expects."""


def study_names(conn: Connection) -> list[str]:
    if not sa.inspect(conn).has_table("studies"):
        return []
    return [row[0] for row in conn.execute(sa.text("SELECT study_name FROM studies ORDER BY study_name"))]


def study_user_attrs(conn: Connection) -> dict[str, dict[str, Any]]:
    """Every study's user attributes, by study name."""
    rows = conn.execute(sa.text(
        "SELECT s.study_name, a.key, a.value_json FROM studies s "
        "JOIN study_user_attributes a ON a.study_id = s.study_id"))
    out: dict[str, dict[str, Any]] = {}
    for name, key, value in rows:
        out.setdefault(name, {})[key] = json_or_text(value)
    return out


# Each table's own autoincrement key: its largest value moves with every row written anywhere in the
# database, and reading it is one step down the primary key's index whatever the database holds.
_ROW_IDS = (("trial_values", "trial_value_id"), ("trial_user_attributes", "trial_user_attribute_id"),
            ("trial_system_attributes", "trial_system_attribute_id"),
            ("trial_intermediate_values", "trial_intermediate_value_id"), ("trial_params", "param_id"))


def study_fingerprint(conn: Connection, study_name: str, metrics_table: str | None) -> tuple[Any, ...] | None:
    """A cheap summary that changes whenever the study gains a trial, a state, a value, an
    attribute, an evaluation or a metrics row: the dashboard rereads the study only when it
    changes. None when there is no such study. A handful of indexed queries (milliseconds at
    100,000 trials): the trials by state, the largest row id of each table a worker adds rows to
    (a row added to another study also counts: a reread too many, never one too few), the study's
    attributes, and the metrics rows of its newest evaluated trial."""
    try:
        found = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"),
                             {"n": study_name}).first()
        if found is None:
            return None
        q = {"sid": int(found[0])}
        states = tuple(sorted((str(state), int(n), int(top)) for state, n, top in conn.execute(sa.text(
            "SELECT state, count(*), max(trial_id) FROM trials WHERE study_id = :sid GROUP BY state"), q)))
        tops = tuple(conn.execute(sa.text(f"SELECT max({key}) FROM {table}")).scalar_one() for table, key in _ROW_IDS)
        study_attrs = int(conn.execute(sa.text(
            "SELECT count(*) FROM study_user_attributes WHERE study_id = :sid"), q).scalar_one())
        metrics: tuple[Any, ...] = (-1,)
        if metrics_table is not None:
            newest = conn.execute(sa.text(f"SELECT max(trial_number) FROM {metrics_table} WHERE study_name = :n"),
                                  {"n": study_name}).scalar_one()
            steps = conn.execute(sa.text(f"SELECT count(*) FROM {metrics_table} WHERE study_name = :n "
                                         "AND trial_number = :t"), {"n": study_name, "t": newest}).scalar_one()
            metrics = (newest, int(steps))
    except (sa.exc.ProgrammingError, sa.exc.NoSuchColumnError) as exc:
        raise SchemaMismatch(str(exc)) from None
    except sa.exc.OperationalError as exc:
        if "no such" in str(exc).lower():
            raise SchemaMismatch(str(exc)) from None
        raise
    return states, tops, study_attrs, metrics
