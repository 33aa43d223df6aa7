"""Read one study straight from Optuna's SQL tables, read-only, in a handful of queries.

Optuna's RDBStorage.get_all_trials builds an ORM object per row (about 4 s for 1,000 trials with 50
evaluations each on a 2-core machine); the dashboard needs the same data in well under a second.
This module selects the rows of Optuna's schema (stable since Optuna 3: studies, study_directions,
study_user_attributes, trials, trial_values, trial_params, trial_user_attributes,
trial_system_attributes, trial_intermediate_values) with plain SELECTs and hands back light trial
records with the attributes of a FrozenTrial that lpstudy.results.frames reads. When the schema does not
match (a future Optuna), lpstudy.results.frames falls back to Optuna's own API.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lpstudy.values import FIXED_PARAMS_ATTR, METRICS_ATTR_PREFIX


class SchemaMismatch(Exception):
    """Optuna's tables are not what this module expects."""


@dataclass
class _State:
    name: str


@dataclass
class TrialRecord:
    """The parts of an Optuna FrozenTrial that lpstudy.results.frames reads."""

    _trial_id: int
    number: int
    state: _State
    datetime_start: datetime | None
    datetime_complete: datetime | None
    values: list[float] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    user_attrs: dict[str, Any] = field(default_factory=dict)
    system_attrs: dict[str, Any] = field(default_factory=dict)
    intermediate_values: dict[int, float] = field(default_factory=dict)

    @property
    def value(self) -> float | None:
        return self.values[0] if self.values else None


@dataclass
class StudyRows:
    study_id: int
    name: str
    directions: list[str]
    user_attrs: dict[str, Any]
    trials: list[TrialRecord]
    intermediate: pd.DataFrame  # trial_id, trial_number, step, val_loss


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
        out.setdefault(name, {})[key] = _loads(value)
    return out


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _value(value: float | None, value_type: str | None) -> float | None:
    kind = str(value_type or "FINITE").upper().rsplit(".", 1)[-1]
    if kind == "INF_POS":
        return math.inf
    if kind == "INF_NEG":
        return -math.inf
    return None if value is None else float(value)


def read_study(conn: Connection, study_name: str) -> StudyRows | None:
    """The study's rows, or None when there is no study by that name. SchemaMismatch when Optuna's
    tables are not laid out as expected."""
    from optuna.distributions import json_to_distribution

    try:
        found = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"),
                             {"n": study_name}).first()
        if found is None:
            return None
        sid = int(found[0])
        q = {"sid": sid}
        directions = [str(d).rsplit(".", 1)[-1] for (d,) in conn.execute(sa.text(
            "SELECT direction FROM study_directions WHERE study_id = :sid ORDER BY objective"), q)]
        user_attrs = {k: _loads(v) for k, v in conn.execute(sa.text(
            "SELECT key, value_json FROM study_user_attributes WHERE study_id = :sid"), q)}
        trials: dict[int, TrialRecord] = {}
        for trial_id, number, state, start, complete in conn.execute(sa.text(
                "SELECT trial_id, number, state, datetime_start, datetime_complete FROM trials "
                "WHERE study_id = :sid ORDER BY number"), q):
            trials[trial_id] = TrialRecord(trial_id, int(number), _State(str(state).rsplit(".", 1)[-1]),
                                           _datetime(start), _datetime(complete))
        for trial_id, value, value_type in conn.execute(sa.text(
                "SELECT v.trial_id, v.value, v.value_type FROM trial_values v JOIN trials t "
                "ON t.trial_id = v.trial_id WHERE t.study_id = :sid AND v.objective = 0"), q):
            trials[trial_id].values = [_value(value, value_type)]
        distributions: dict[str, Any] = {}
        for trial_id, name, internal, dist_json in conn.execute(sa.text(
                "SELECT p.trial_id, p.param_name, p.param_value, p.distribution_json FROM trial_params p "
                "JOIN trials t ON t.trial_id = p.trial_id WHERE t.study_id = :sid"), q):
            dist = distributions.get(dist_json)
            if dist is None:
                dist = distributions[dist_json] = json_to_distribution(dist_json)
            trials[trial_id].params[name] = dist.to_external_repr(internal)
        for trial_id, key, value in conn.execute(sa.text(
                "SELECT a.trial_id, a.key, a.value_json FROM trial_user_attributes a "
                "JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = :sid"), q):
            trials[trial_id].user_attrs[key] = _loads(value)
        for trial_id, key, value in conn.execute(sa.text(
                "SELECT a.trial_id, a.key, a.value_json FROM trial_system_attributes a "
                "JOIN trials t ON t.trial_id = a.trial_id WHERE t.study_id = :sid "
                "AND (a.key LIKE :metrics OR a.key = :fixed)"),
                {**q, "metrics": f"{METRICS_ATTR_PREFIX}%", "fixed": FIXED_PARAMS_ATTR}):
            trials[trial_id].system_attrs[key] = _loads(value)
        intermediate = pd.read_sql(sa.text(
            "SELECT i.trial_id, i.step, i.intermediate_value, i.intermediate_value_type "
            "FROM trial_intermediate_values i JOIN trials t ON t.trial_id = i.trial_id "
            "WHERE t.study_id = :sid"), conn, params=q)
    except (sa.exc.ProgrammingError, sa.exc.NoSuchColumnError, KeyError) as exc:
        raise SchemaMismatch(str(exc)) from None
    except sa.exc.OperationalError as exc:
        if "no such" in str(exc).lower():  # SQLite: no such table / column
            raise SchemaMismatch(str(exc)) from None
        raise
    numbers = {tid: t.number for tid, t in trials.items()}
    raw_kinds = intermediate["intermediate_value_type"]
    kinds = raw_kinds.map({k: str(k).rsplit(".", 1)[-1].upper() for k in raw_kinds.unique()})
    values = intermediate["intermediate_value"].astype("float64")
    values = values.mask(kinds == "INF_POS", math.inf).mask(kinds == "INF_NEG", -math.inf)
    frame = pd.DataFrame({"trial_id": intermediate["trial_id"].astype("int64"),
                          "trial_number": intermediate["trial_id"].map(numbers).astype("int64"),
                          "step": intermediate["step"].astype("int64"),
                          "val_loss": values})
    return StudyRows(sid, study_name, directions, user_attrs, list(trials.values()), frame)


def study_fingerprint(conn: Connection, study_name: str, metrics_table: str | None) -> tuple | None:
    """A cheap summary that changes whenever the study gains a trial, a state, a value, an
    attribute, an evaluation or a metrics row: the dashboard rereads the study only when it
    changes. None when there is no such study. A few COUNT queries (milliseconds)."""
    try:
        found = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"),
                             {"n": study_name}).first()
        if found is None:
            return None
        q = {"sid": int(found[0])}
        states = tuple(sorted((str(state), int(n), int(top)) for state, n, top in conn.execute(sa.text(
            "SELECT state, count(*), max(trial_id) FROM trials WHERE study_id = :sid GROUP BY state"), q)))
        counts = tuple(int(conn.execute(sa.text(
            f"SELECT count(*) FROM {table} x JOIN trials t ON t.trial_id = x.trial_id WHERE t.study_id = :sid"),
            q).scalar_one()) for table in ("trial_values", "trial_user_attributes", "trial_system_attributes",
                                           "trial_intermediate_values", "trial_params"))
        study_attrs = int(conn.execute(sa.text(
            "SELECT count(*) FROM study_user_attributes WHERE study_id = :sid"), q).scalar_one())
        metrics = -1
        if metrics_table is not None:
            metrics = int(conn.execute(sa.text(f"SELECT count(*) FROM {metrics_table} WHERE study_name = :n"),
                                       {"n": study_name}).scalar_one())
    except (sa.exc.ProgrammingError, sa.exc.NoSuchColumnError) as exc:
        raise SchemaMismatch(str(exc)) from None
    except sa.exc.OperationalError as exc:
        if "no such" in str(exc).lower():
            raise SchemaMismatch(str(exc)) from None
        raise
    return states, counts, study_attrs, metrics


def _datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return pd.Timestamp(value).to_pydatetime()
