"""What the readers ask of a big study, answered by the database: counts, the best trials, one row
per trial with the attributes pivoted into columns, the last evaluation of each trial, and the
evaluations of chosen trials only.

lpstudy.db.optuna_tables reads a whole study into Python (every attribute row, every evaluation):
at 10,000 trials × 50 evaluations that is 330,000 attribute rows decoded one by one and half a
million evaluations, seconds before anything is drawn. Here the joins, GROUP BYs, ORDER BY ... LIMIT
and the pivot of attributes into columns (MAX(CASE WHEN key = ...)) run in SQL over Optuna's schema
(stable since Optuna 3) and the metrics table, and only what a reader shows leaves the database.
The same plain SQL runs on SQLite and PostgreSQL. Callers catch optuna_tables.SchemaMismatch (an
unknown schema) through `guarded`, and fall back to Optuna's API.

The best trial is lpstudy.design.best's rule written in SQL: COMPLETE, a finite value, not diverged
(the user attribute `diverged` absent or falsy), lowest value first, ties to the lower number.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lpstudy.db.optuna_tables import SchemaMismatch
from lpstudy.db.dialects import JsonNumber, LastEvaluationJoin, SecondsBetween, column, sql_of
from lpstudy.values import SPENT_STATES, json_or_text

# JSON texts a falsy `diverged` attribute can hold (bool(json.loads(text)) is False)
_FALSY_JSON = ("false", "null", "0", "0.0", '""', "[]", "{}")
_NOT_DIVERGED = (f"(d.value_json IS NULL OR d.value_json IN ({', '.join(repr(x) for x in _FALSY_JSON)}))")


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Turn the errors of a schema this module does not know into SchemaMismatch."""
    try:
        yield
    except (sa.exc.ProgrammingError, sa.exc.NoSuchColumnError, KeyError) as exc:
        raise SchemaMismatch(str(exc)) from None
    except sa.exc.OperationalError as exc:
        if "no such" in str(exc).lower():  # SQLite: no such table / column
            raise SchemaMismatch(str(exc)) from None
        raise


def stored_floats(values: pd.Series, types: pd.Series) -> pd.Series:
    """Optuna's stored floats as the floats they stand for: a value column and its type column
    (FINITE, INF_POS, INF_NEG, NAN; NULL where there is no value: NaN), the one place ∞ is read."""
    kinds = types.map(lambda k: None if pd.isna(k) else str(k).rsplit(".", 1)[-1].upper())
    out = pd.to_numeric(values, errors="coerce").astype("float64")
    out = out.mask(kinds == "INF_POS", math.inf).mask(kinds == "INF_NEG", -math.inf)
    return out.where(kinds.notna() & (kinds != "NAN"), math.nan)


def _state(value: Any) -> str:
    return str(value).rsplit(".", 1)[-1]


def study_id(conn: Connection, study_name: str) -> int | None:
    found = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"), {"n": study_name}).first()
    return None if found is None else int(found[0])


IDS_PER_QUERY = 2000  # trial ids in one IN (...) list (SQLite allows 32,766 parameters a statement)


def in_chunks(ids: Sequence[int]) -> list[Sequence[int]]:
    """ids in lists of at most IDS_PER_QUERY, for one query each."""
    return [ids[i:i + IDS_PER_QUERY] for i in range(0, len(ids), IDS_PER_QUERY)]


_CANDIDATE_JOINS = ("JOIN trial_values v ON v.trial_id = t.trial_id AND v.objective = 0 "
                    "LEFT JOIN trial_user_attributes d ON d.trial_id = t.trial_id AND d.key = 'diverged'")
_CANDIDATE_RULE = f"t.state = 'COMPLETE' AND v.value_type = 'FINITE' AND v.value IS NOT NULL AND {_NOT_DIVERGED}"


def study_summaries(conn: Connection) -> dict[str, dict[str, Any]]:
    """Per study name: its number of trials and its best value (None when no trial can be best)."""
    counts: dict[str, int] = dict(conn.execute(sa.text(
        "SELECT s.study_name, count(t.trial_id) FROM studies s LEFT JOIN trials t ON t.study_id = s.study_id "
        "GROUP BY s.study_name")).all())
    best: dict[str, Any] = dict(conn.execute(sa.text(
        f"SELECT s.study_name, min(v.value) FROM studies s JOIN trials t ON t.study_id = s.study_id {_CANDIDATE_JOINS} "
        f"WHERE {_CANDIDATE_RULE} GROUP BY s.study_name")).all())
    return {name: {"n_trials": int(n), "best_value": None if best.get(name) is None else float(best[name])}
            for name, n in counts.items()}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _where(ids: Sequence[int] | None, state: str | None) -> tuple[str, dict[str, Any]]:
    sql, params = "", dict[str, Any]()
    if state is not None:
        sql += " AND t.state = :state"
        params["state"] = state
    if ids is not None:
        marks = ", ".join(f":id{i}" for i in range(len(ids)))
        sql += f" AND t.trial_id IN ({marks or 'NULL'})"
        params.update({f"id{i}": int(tid) for i, tid in enumerate(ids)})
    return sql, params


def _states(column: pd.Series) -> pd.Series:
    """Optuna's states as names (COMPLETE, ...), each distinct value turned once."""
    return column.map({value: _state(value) for value in column.dropna().unique()})


class StudyTables:
    """One study's rows in Optuna's tables, for one read (lpstudy.db.trial_reader hands it to the
    reader's function): each method one query on this study, never a connection handed out. metrics:
    the metrics table's rows of the study (or of trial_ids); empty where there is none."""

    def __init__(self, conn: Connection, sid: int, metrics: Callable[..., pd.DataFrame]) -> None:
        self._conn, self._sid, self._metrics = conn, sid, metrics

    @property
    def study_id(self) -> int:
        """The study's id in its storage (a copy keeps it): a new id is a study made again."""
        return self._sid

    def metrics(self, trial_ids: Sequence[int] | None = None) -> pd.DataFrame:
        """The metrics table's rows of the study (or of trial_ids); empty where there is none."""
        return self._metrics(trial_ids=trial_ids)

    def header(self) -> tuple[list[str], dict[str, Any]]:
        """The study's directions and user attributes (decoded JSON)."""
        directions = [str(d).rsplit(".", 1)[-1] for (d,) in self._conn.execute(sa.text(
            "SELECT direction FROM study_directions WHERE study_id = :sid ORDER BY objective"), {"sid": self._sid})]
        attrs = {key: json_or_text(value) for key, value in self._conn.execute(sa.text(
            "SELECT key, value_json FROM study_user_attributes WHERE study_id = :sid"), {"sid": self._sid})}
        return directions, attrs

    def study_system_keys(self, like: str) -> list[str]:
        """The keys of the study's own system attributes that match `like` (an SQL LIKE pattern): where a
        reader asks whether there is anything (a note) before it opens Optuna's storage to read it."""
        return [str(key) for (key,) in self._conn.execute(sa.text(
            "SELECT key FROM study_system_attributes WHERE study_id = :sid AND key LIKE :like"),
            {"sid": self._sid, "like": like})]

    def trial_rows(self, attr_keys: Sequence[str], ids: Sequence[int] | None = None,
                   state: str | None = None) -> pd.DataFrame:
        """One row per trial of the study (or of `ids`, or of one state): trial_id, number, state,
        datetime_start, datetime_complete, value, value_type, and each user attribute of attr_keys as
        its JSON text (NULL when absent) in a column of its name; pivoted in SQL."""
        keys = list(dict.fromkeys(attr_keys))
        key_params = {f"k{i}": key for i, key in enumerate(keys)}
        pivots = "".join(f", max(CASE WHEN a.key = :k{i} THEN a.value_json END) AS {_quoted('a_' + key)}"
                         for i, key in enumerate(keys))
        where, params = _where(ids, state)
        frame = pd.read_sql(sa.text(
            "SELECT t.trial_id, min(t.number) AS number, min(t.state) AS state, min(t.datetime_start) AS datetime_start, "
            "min(t.datetime_complete) AS datetime_complete, min(v.value) AS value, min(v.value_type) AS value_type"
            f"{pivots} FROM trials t LEFT JOIN trial_values v ON v.trial_id = t.trial_id AND v.objective = 0 "
            f"LEFT JOIN trial_user_attributes a ON a.trial_id = t.trial_id "
            f"AND a.key IN ({', '.join(':' + k for k in key_params) or 'NULL'}) "
            f"WHERE t.study_id = :sid{where} GROUP BY t.trial_id ORDER BY min(t.number)"), self._conn,
            params={"sid": self._sid, **params, **key_params})
        frame.columns = [c[2:] if c.startswith("a_") and c[2:] in keys else c for c in frame.columns]
        frame["state"] = _states(frame["state"])
        frame["value"] = stored_floats(frame["value"], frame.pop("value_type"))
        return frame

    def trial_ids_with_user_attr(self, key: str, state: str | None = None) -> list[int]:
        """Optuna trial ids of the study's trials (of one state) that have the user attribute `key`, in
        number order: a few among many (a search's race trials), without reading the others."""
        where, params = _where(None, state)
        return [int(tid) for (tid,) in self._conn.execute(sa.text(
            "SELECT t.trial_id FROM trials t JOIN trial_user_attributes a ON a.trial_id = t.trial_id "
            f"WHERE t.study_id = :sid AND a.key = :key{where} ORDER BY t.number"),
            {"sid": self._sid, "key": key, **params})]

    def param_rows(self, ids: Sequence[int] | None = None,
                   state: str | None = None) -> pd.DataFrame:
        """Every parameter of the study's trials (or of `ids`): trial_id, param_name, param_value
        (Optuna's internal float) and distribution_json."""
        where, params = _where(ids, state)
        return pd.read_sql(sa.text(
            "SELECT p.trial_id, p.param_name, p.param_value, p.distribution_json FROM trial_params p "
            f"JOIN trials t ON t.trial_id = p.trial_id WHERE t.study_id = :sid{where}"), self._conn,
            params={"sid": self._sid, **params})

    def system_attr_rows(self, keys_like: Sequence[str], ids: Sequence[int] | None = None,
                         state: str | None = None) -> list[tuple[int, str, str]]:
        """(trial_id, key, value_json) of the system attributes whose key matches one of keys_like
        (SQL LIKE patterns)."""
        where, params = _where(ids, state)
        likes = " OR ".join(f"a.key LIKE :like{i}" for i in range(len(keys_like)))
        params.update({f"like{i}": pattern for i, pattern in enumerate(keys_like)})
        return [tuple(row) for row in self._conn.execute(sa.text(
            "SELECT a.trial_id, a.key, a.value_json FROM trial_system_attributes a JOIN trials t "
            f"ON t.trial_id = a.trial_id WHERE t.study_id = :sid{where} AND ({likes})"), {"sid": self._sid, **params})]

    def last_evaluations(self, ids: Sequence[int] | None = None,
                         state: str | None = None, counts: bool = True) -> pd.DataFrame:
        """Per trial with an intermediate value: last_step, its value and type, and (with counts)
        n_evals. The last one by an index lookup per trial (lpstudy.db.dialects.LastEvaluationJoin),
        the count by a count over the trial's (trial_id, step) index entries."""
        where, params = _where(ids, state)
        count = (", (SELECT count(*) FROM trial_intermediate_values c WHERE c.trial_id = t.trial_id) AS n_evals"
                 if counts else "")
        last = pd.read_sql(sa.text(
            f"SELECT t.trial_id, l.step AS last_step, l.intermediate_value, l.intermediate_value_type{count} "
            f"FROM trials t {sql_of(self._conn, LastEvaluationJoin('t', 'l'))} WHERE t.study_id = :sid{where}"),
            self._conn, params={"sid": self._sid, **params})
        last["last_val_loss"] = stored_floats(last.pop("intermediate_value"), last.pop("intermediate_value_type"))
        return last

    def intermediate_rows(self, ids: Sequence[int] | None = None) -> pd.DataFrame:
        """Optuna's intermediate values of the study's trials (or of `ids`): trial_id, number, step,
        intermediate_value, intermediate_value_type."""
        where, params = _where(ids, None)
        if ids is not None:  # trial ids are unique in the database: look them up by the index
            where = where.replace("t.trial_id IN", "i.trial_id IN")
        raw = pd.read_sql(sa.text(
            "SELECT i.trial_id, t.number, i.step, i.intermediate_value, i.intermediate_value_type "
            "FROM trial_intermediate_values i JOIN trials t ON t.trial_id = i.trial_id "
            f"WHERE t.study_id = :sid{where}"), self._conn, params={"sid": self._sid, **params})
        raw["val_loss"] = stored_floats(raw.pop("intermediate_value"), raw.pop("intermediate_value_type"))
        return raw

    def trial_ids_of(self, numbers: Sequence[int]) -> dict[int, int]:
        """{trial_id: number} of the study's trials with these numbers."""
        marks = ", ".join(f":n{i}" for i in range(len(numbers))) or "NULL"
        rows = self._conn.execute(sa.text(f"SELECT trial_id, number FROM trials WHERE study_id = :sid AND number IN ({marks})"),
                            {"sid": self._sid, **{f"n{i}": int(n) for i, n in enumerate(numbers)}})
        return {int(tid): int(number) for tid, number in rows}

    def state_counts(self) -> dict[str, int]:
        """Trials by state."""
        rows = self._conn.execute(sa.text("SELECT state, count(*) FROM trials WHERE study_id = :sid GROUP BY state"),
                            {"sid": self._sid})
        return {_state(state): int(n) for state, n in rows}

    def ranked_trial_ids(self, k: int | None = 1) -> list[tuple[int, int, float]]:
        """(trial_id, number, value) of the best trials (lpstudy.design.best's rule), best first."""
        limit = "" if k is None else f" LIMIT {int(k)}"
        rows = self._conn.execute(sa.text(f"SELECT t.trial_id, t.number, v.value FROM trials t {_CANDIDATE_JOINS} WHERE t.study_id = :sid "
                                    f"AND {_CANDIDATE_RULE} "
                                    f"ORDER BY v.value, t.number{limit}"), {"sid": self._sid})
        return [(int(tid), int(number), float(value)) for tid, number, value in rows]

    def trial_ids_in_state(self, state: str) -> list[int]:
        """Optuna trial ids of the study's trials in one state (RUNNING, ...), in number order."""
        return [int(tid) for (tid,) in self._conn.execute(sa.text(
            "SELECT trial_id FROM trials WHERE study_id = :sid AND state = :state ORDER BY number"),
            {"sid": self._sid, "state": state})]

    def user_attributes_of(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """{trial_id: {key: decoded value}} of every user attribute of the trials `ids` (a few)."""
        marks = ", ".join(f":id{i}" for i in range(len(ids))) or "NULL"
        rows = self._conn.execute(sa.text(f"SELECT trial_id, key, value_json FROM trial_user_attributes WHERE trial_id IN ({marks})"),
                            {f"id{i}": int(tid) for i, tid in enumerate(ids)})
        attributes: dict[int, dict[str, Any]] = {int(tid): {} for tid in ids}
        for tid, key, text in rows:
            attributes[int(tid)][key] = json_or_text(text)
        return attributes

    def diverged_count(self) -> int:
        """COMPLETE trials whose `diverged` attribute is truthy."""
        return int(self._conn.execute(sa.text(
            "SELECT count(*) FROM trials t JOIN trial_user_attributes d ON d.trial_id = t.trial_id "
            f"AND d.key = 'diverged' WHERE t.study_id = :sid AND t.state = 'COMPLETE' AND NOT {_NOT_DIVERGED}"),
            {"sid": self._sid}).scalar_one())

    def mean_complete_seconds(self) -> float | None:
        """The mean duration in seconds of the COMPLETE trials with both times."""
        seconds = sql_of(self._conn, SecondsBetween(column("datetime_start"), column("datetime_complete")))
        value = self._conn.execute(sa.text(
            f"SELECT avg({seconds}) FROM trials WHERE study_id = :sid AND state = 'COMPLETE' "
            "AND datetime_start IS NOT NULL AND datetime_complete IS NOT NULL"), {"sid": self._sid}).scalar_one()
        return None if value is None else float(value)

    def compute_sums(self) -> tuple[list[dict[str, Any]], float]:
        """What lpstudy.results.reading.compute.per_trial computes of every trial that spent compute, summed in
        SQL by state and device kind, and the study's median pace (seconds a step over the trials with
        steps and a time): ([{state, cpu, trials, steps, time_s, unpaced_steps, saved_steps, saved_s,
        unpaced_saved_steps}, ...], pace). Per trial, as per_trial: steps the `steps` attribute where
        positive, else the last evaluated step (looked up only for those trials), else 0; time the
        `wall_time_s` attribute where positive, else start to end; cpu where the device is absent, ""
        or "cpu"; a pruned trial saved max(0, max_steps − steps) steps. A trial without a time counts
        its steps at the median pace (unpaced_steps), as does what a pruned trial without a pace of its
        own saved (unpaced_saved_steps). Attributes that are not JSON numbers count as absent."""
        def attribute(alias: str) -> str:
            return sql_of(self._conn, JsonNumber(column(f"{alias}.value_json")))

        states = ", ".join(f"'{state}'" for state in SPENT_STATES)
        duration = sql_of(self._conn, SecondsBetween(column("t.datetime_start"), column("t.datetime_complete")))
        per_trial = (
            "SELECT t.state, CASE WHEN dv.value_json IS NULL OR lower(dv.value_json) IN ('\"cpu\"', '\"\"') "
            "THEN 1 ELSE 0 END AS cpu, "
            f"COALESCE(CASE WHEN {attribute('st')} > 0 THEN {attribute('st')} END, "
            "(SELECT max(e.step) FROM trial_intermediate_values e WHERE e.trial_id = t.trial_id), 0) AS steps, "
            f"COALESCE(CASE WHEN {attribute('wt')} > 0 THEN {attribute('wt')} END, {duration}) AS time_s, "
            f"{attribute('ms')} AS max_steps FROM trials t "
            + "".join(f"LEFT JOIN trial_user_attributes {alias} ON {alias}.trial_id = t.trial_id AND {alias}.key = '{key}' "
                      for alias, key in (("st", "steps"), ("wt", "wall_time_s"), ("ms", "max_steps"), ("dv", "device")))
            + f"WHERE t.study_id = :sid AND t.state IN ({states})")
        saved = ("CASE WHEN state = 'PRUNED' AND COALESCE(max_steps, steps) > steps "
                 "THEN COALESCE(max_steps, steps) - steps ELSE 0 END")
        paced = "steps > 0 AND time_s IS NOT NULL"
        # the median as pandas takes it: the middle pace, or the mean of the two middle ones
        median = ("(SELECT avg(pace) FROM (SELECT pace FROM paces ORDER BY pace LIMIT (SELECT 2 - n % 2 FROM n) "
                  "OFFSET (SELECT (n - 1) / 2 FROM n)) middle)")
        rows = self._conn.execute(sa.text(
            f"WITH per AS ({per_trial}), paces AS (SELECT time_s / steps AS pace FROM per WHERE {paced}), "
            "n AS (SELECT count(*) AS n FROM paces) "
            "SELECT state, cpu, count(*) AS trials, sum(steps) AS steps, sum(time_s) AS time_s, "
            "sum(CASE WHEN time_s IS NULL THEN steps ELSE 0 END) AS unpaced_steps, "
            f"sum({saved}) AS saved_steps, "
            f"sum(CASE WHEN {paced} THEN ({saved}) * time_s / steps ELSE 0 END) AS saved_s, "
            f"sum(CASE WHEN {paced} THEN 0 ELSE {saved} END) AS unpaced_saved_steps, {median} AS pace "
            "FROM per GROUP BY state, cpu"), {"sid": self._sid}).mappings().all()
        pace = rows[0]["pace"] if rows else None
        groups = [{**{k: (float(v) if v is not None else 0.0) for k, v in row.items() if k not in ("state", "cpu", "pace")},
                   "state": _state(row["state"]), "cpu": bool(row["cpu"])} for row in rows]
        return groups, float(pace) if pace is not None else 0.0

    def count_and_new(self, top: int) -> tuple[int, int]:
        """(the study's trials, how many of them have an id above top)."""
        total, new = self._conn.execute(sa.text(
            "SELECT count(*), count(CASE WHEN trial_id > :top THEN 1 END) FROM trials WHERE study_id = :sid"),
            {"sid": self._sid, "top": top}).one()
        return int(total), int(new)

    def trial_ids_above(self, top: int) -> list[int]:
        """The study's trial ids above top, in order."""
        return [int(tid) for (tid,) in self._conn.execute(sa.text(
            "SELECT trial_id FROM trials WHERE study_id = :sid AND trial_id > :top ORDER BY trial_id"),
            {"sid": self._sid, "top": top})]
