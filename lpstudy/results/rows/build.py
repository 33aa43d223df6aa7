"""The one builder of a study's frames from its rows in Optuna's tables (lpstudy.db.study_queries.
StudyTables, which the storage hands a reader's function): the trials frame (TRIAL_COLUMNS, column by
column in trial_table), the learning curves (CURVE_COLUMNS), the study's info, and the three as a
StudyData (study_rows: a grid's repeated cells left out, no curves). The read side (lpstudy.results.
reading.frames, which adds a search's chosen configuration and the curves) and the stage engine
(lpstudy.study.stages, which hands the statistics what it read) build them here, one way.

Frames (column names are a contract; see TRIAL_COLUMNS and CURVE_COLUMNS):
  trials   one row per trial: number, state, value, the training fields each trial stores
           (lpstudy.training.fields: p (∞ allowed), lr, gain_init, max_steps, fold, folds, seed,
           threads), the run summary (lpstudy.training.metrics.SUMMARY_FIELDS), who ran it, when,
           and its last evaluation
  curves   one row per evaluation of a trial: trial_id, trial_number, step and
           lpstudy.training.metrics.METRIC_FIELDS, merged from the metrics table (SQL storages), the
           `lpstudy_metrics:<step>` system attributes (journal/gRPC-fed studies) and, where neither
           has a step, Optuna's intermediate values (validation loss only)
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from lpstudy.db.study_queries import StudyTables
from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.cells import grid_fields, one_per_cell
from lpstudy.results.analysis.study_data import StudyData, StudyInfo
from lpstudy.training.fields import FIELDS
from lpstudy.training.metrics import METRIC_FIELDS, SUMMARY_FIELDS
from lpstudy.values import METRICS_ATTR_PREFIX, SPEC_ATTR, SYNTHETIC_ATTR, to_float

RUN_FIELDS = tuple(f for f in FIELDS.values() if f.trial_attr)  # the training fields a trial stores
WHO = ("host", "pid", "device", "worker", "version", "started_at", "preset", "gain_rule")
TRIAL_COLUMNS: tuple[str, ...] = (
    "number", "trial_id", "state", "value", *(f.name for f in RUN_FIELDS),
    *[name for name in SUMMARY_FIELDS if name != "device"],
    *WHO, "datetime_start", "datetime_complete", "duration_s",
    "last_step", "last_val_loss", "n_evals",
)
CURVE_COLUMNS: tuple[str, ...] = ("trial_id", "trial_number", *METRIC_FIELDS)
BOOL_FIELDS = ("diverged", "stopped")
_TEXT_FIELDS = ("state", "device", "host", "worker", "version", "started_at", "preset", "gain_rule",
                *(f.name for f in RUN_FIELDS if not f.numeric))


def _plain_spec(attrs: dict) -> dict:
    spec = attrs.get(SPEC_ATTR) or {}
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            spec = {}
    return spec if isinstance(spec, dict) else {}


def stored_spec(plain: dict[str, Any]) -> StudySpec | None:
    """A study's stored spec (its user attribute, as JSON) read once into a StudySpec (its one
    parser, StudySpec.from_plain), as every reader then reads it; None for a study without one (made
    by plain Optuna). A spec whose space this version cannot read (an older lpstudy's field) keeps
    the rest with an empty space: its readers say what they say of a spec without a space."""
    if not plain:
        return None
    try:
        return StudySpec.from_plain(plain)
    except Exception:  # noqa: BLE001 - a space (or value) this version cannot read
        try:
            return StudySpec.from_plain({**plain, "space": {}})
        except Exception:  # noqa: BLE001 - nothing of it this version reads
            return None


def study_info(name: str, attrs: dict, direction: str = "minimize") -> StudyInfo:
    attrs = attrs or {}
    plain = _plain_spec(attrs)
    return StudyInfo(name=name, kind=str(attrs.get("kind") or plain.get("kind") or "search"),
                     preset=attrs.get("preset") or plain.get("preset"), direction=direction.lower(),
                     spec=stored_spec(plain), synthetic=bool(attrs.get(SYNTHETIC_ATTR)))


def trials_of(tables: StudyTables, ids=None, state: str | None = None) -> pd.DataFrame:
    """The trials frame (see the module's docstring) of the study's trials (or of `ids`, or of one
    state), before a grid's repeated cells are left out: the one builder (lpstudy.results.rows.trial_table),
    whatever storage the rows come from."""
    from lpstudy.results.rows.trial_table import raw_trials_frame

    raw, last = raw_trials_frame(tables, RUN_FIELDS, WHO, BOOL_FIELDS, ids=ids, state=state)
    return finish_trials_frame(raw, last)


def finish_trials_frame(frame: pd.DataFrame, last: pd.DataFrame | None) -> pd.DataFrame:
    """The trials frame from one row per trial (raw_trials_frame's columns, lpstudy.results.rows.trial_table) and the last evaluations by
    trial_id (last_step, last_val_loss, n_evals): its columns in order, typed, sorted by number."""
    if last is not None and len(last) and len(frame):
        frame = frame.join(last, on="trial_id")
    for column in TRIAL_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object" if column in _TEXT_FIELDS else "float64")
    extra = sorted(c for c in frame.columns if c not in TRIAL_COLUMNS)
    frame = frame[[*TRIAL_COLUMNS, *extra]]
    frame["n_evals"] = frame["n_evals"].fillna(0)
    for column in ("datetime_start", "datetime_complete"):
        frame[column] = to_datetimes(frame[column])
    frame["duration_s"] = (frame["datetime_complete"] - frame["datetime_start"]).dt.total_seconds()
    for column in BOOL_FIELDS:  # absent (NaN) is False; an all-absent column is float64, so fill as the column's type
        frame[column] = frame[column].where(frame[column].notna(), False).astype(bool)
    numeric = [c for c in TRIAL_COLUMNS if c not in (*_TEXT_FIELDS, *BOOL_FIELDS, "datetime_start",
                                                     "datetime_complete")]
    frame[numeric] = frame[numeric].apply(pd.to_numeric, errors="coerce").astype("float64")
    frame["repeat"] = frame["repeat"].fillna(0)  # a trial made before repeats ran in the plain CV, repeat 0
    frame["number"] = frame["number"].astype("int64")
    frame["trial_id"] = frame["trial_id"].astype("int64")
    return frame.sort_values("number", ignore_index=True)


def to_datetimes(column: pd.Series) -> pd.Series:
    """Optuna's trial times as datetimes: SQLite gives ISO 8601 texts, PostgreSQL datetimes (a column
    of one kind: one database's; its first value tells which, instead of a test per row)."""
    present = column.dropna()
    if column.dtype == object and len(present) and isinstance(present.iloc[0], str):
        return pd.to_datetime(column, format="ISO8601")
    return pd.to_datetime(column)


def _empty_curves() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in CURVE_COLUMNS})
    return frame.astype({"trial_id": "int64", "trial_number": "int64", "step": "int64"})


def attr_curve_rows(items) -> pd.DataFrame:
    """Curves from (trial_id, trial_number, system attribute key, its value) items; keys other than
    `lpstudy_metrics:<step>` are left out."""
    rows: list[dict[str, Any]] = []
    for trial_id, number, key, record in items:
        if not key.startswith(METRICS_ATTR_PREFIX) or not isinstance(record, dict):
            continue
        row = {name: to_float(record.get(name)) for name in METRIC_FIELDS}
        row.update(trial_id=trial_id, trial_number=number, step=int(record.get("step", key[len(METRICS_ATTR_PREFIX):])))
        rows.append(row)
    return pd.DataFrame(rows) if rows else _empty_curves()


def merge_curves(*sources: pd.DataFrame) -> pd.DataFrame:
    """One row per (trial, step) from sources in order of precedence (typically the metrics table,
    the system attributes, then Optuna's intermediate values, which hold val_loss only)."""
    parts = [frame.assign(_rank=rank) for rank, frame in enumerate(sources) if len(frame)]
    if not parts:
        return _empty_curves()
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    frame = frame.sort_values(["trial_number", "step", "_rank"], kind="stable")
    if len(parts) > 1:
        frame = frame.drop_duplicates(["trial_id", "step"], keep="first")
    frame = frame.drop(columns="_rank").reset_index(drop=True)
    for column in CURVE_COLUMNS:
        if column not in frame.columns:
            frame[column] = math.nan
    frame = frame[list(CURVE_COLUMNS)]
    floats = [c for c in METRIC_FIELDS if c != "step"]
    frame[floats] = frame[floats].astype("float64")
    return frame.astype({"trial_id": "int64", "trial_number": "int64", "step": "int64"})


def curves_of(tables: StudyTables, numbers: dict, ids) -> pd.DataFrame:
    """The curves of the trials `ids` (None: every trial) from the metrics table, the
    `lpstudy_metrics:<step>` system attributes and Optuna's intermediate values, merged; only the
    trials of `numbers` ({trial_id: number}) are kept."""
    kept = set(numbers)
    table = tables.metrics(trial_ids=ids)
    attrs = attr_curve_rows((tid, numbers[tid], key, _json(text)) for tid, key, text in tables.system_attr_rows(
        [f"{METRICS_ATTR_PREFIX}%"], ids=ids) if tid in numbers)
    raw = tables.intermediate_rows(ids=ids)
    intermediate = pd.DataFrame({"trial_id": raw["trial_id"].astype("int64"), "trial_number": raw["number"].astype("int64"),
                                 "step": raw["step"].astype("int64"), "val_loss": raw["val_loss"]})
    merged = merge_curves(table, attrs, intermediate)
    return merged[merged["trial_id"].isin(kept)].reset_index(drop=True)  # not a duplicate cell's


def _json(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


EVERY_CURVE = "every"  # load_study(curves=EVERY_CURVE): every trial's curve, however big the study (the verdicts)


def study_rows(tables: StudyTables, study_name: str, frame: pd.DataFrame) -> StudyData:
    """The study's info and trials (its trials frame `frame`, trials_of, with a grid's repeated cells
    left out: lpstudy.results.analysis.cells), no curves: what the verdicts read of a study."""
    directions, attrs = tables.header()
    info = study_info(study_name, attrs, (directions or ["minimize"])[0])
    duplicates: list[int] = []
    cell = grid_fields(info.spec)
    if cell:  # a grid cell counts once (lpstudy.results.analysis.cells), keyed on every gridded field
        frame, _, duplicates = one_per_cell(frame, None, cell)
    return StudyData(name=study_name, info=info, trials=frame, curves=_empty_curves(), duplicates=duplicates)
