"""The trials frame (lpstudy.results.rows.build.TRIAL_COLUMNS), the one builder of it: from a study's rows
in Optuna's tables (lpstudy.db.study_queries.StudyTables: the database's own, or a copy of a study
read through Optuna's API) in a few queries, column by column: the attributes arrive pivoted into
columns (lpstudy.db.study_queries.trial_rows), each column's JSON texts are decoded once per
distinct text, and the parameters' internal values are mapped to their external ones by Optuna's
own distributions, decoded once per distribution. The work per trial is a few array operations
instead of a Python dict per attribute.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from lpstudy.db.study_queries import StudyTables
from lpstudy.training.metrics import SUMMARY_FIELDS
from lpstudy.values import FIXED_PARAMS_ATTR, P, json_or_text, p_of_params, read_p, to_float


def numbers_of(texts: pd.Series, convert: Callable[[Any], float]) -> np.ndarray:
    """JSON texts as floats, as convert(json.loads(text)) gives them: numbers parsed in one vectorised
    pass (pandas parses a JSON number's text to the same float as Python), the JSON decoder only for
    the rest (null, "inf", true, ...)."""
    out = pd.to_numeric(texts, errors="coerce").to_numpy(dtype="float64", na_value=np.nan, copy=True)
    rest = np.flatnonzero(np.isnan(out) & texts.notna().to_numpy() & (texts != "NaN").to_numpy())
    if len(rest):  # decoded once per distinct text: a column of 90,000 JSON nulls is one decode, not 90,000
        values = texts.to_numpy(dtype=object)[rest]
        table = {text: convert(json_or_text(text)) for text in pd.unique(values)}
        out[rest] = [table[text] for text in values]
    return out


def _decoded(texts: pd.Series, convert: Callable[[Any], Any]) -> list:
    """convert(json.loads(text)) per row, decoding each distinct text once."""
    table = {text: convert(json_or_text(text)) for text in texts.dropna().unique()}
    missing = convert(None)
    return [missing if text is None or text is np.nan else table[text] for text in texts.to_numpy(dtype=object)]


def _external_values(dist_json: str, internal: np.ndarray) -> list:
    """Optuna's internal parameter values (floats) as the values the trial saw, for one distribution
    in Optuna's JSON, decoded as Optuna decodes it (a categorical's choice, an int distribution's
    integer, a float), the deprecated distributions of old studies included."""
    from optuna.distributions import json_to_distribution

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Optuna's note on a deprecated distribution
        dist = json_to_distribution(dist_json)
    return [dist.to_external_repr(v) for v in internal.tolist()]


def _external_params(rows: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """{trial_id: {name: external value}} of param_rows, mapped once per distribution."""
    out: dict[int, dict[str, Any]] = {}
    for dist_json, group in rows.groupby("distribution_json", sort=False):
        values = _external_values(dist_json, group["param_value"].to_numpy(dtype="float64"))
        for tid, name, value in zip(group["trial_id"].to_numpy(), group["param_name"].to_numpy(), values):
            out.setdefault(int(tid), {})[name] = value
    return out


def raw_trials_frame(tables: StudyTables, run_fields: Sequence, who: Sequence[str],
                     bool_fields: Sequence[str], ids: Sequence[int] | None = None,
                     state: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the raw trials frame, the last evaluations by trial_id) of the study's trials (or of `ids`,
    or of one state), before frames.finish_trials_frame orders and types the columns."""
    keys = [*(f.name for f in run_fields), *SUMMARY_FIELDS, *who]
    rows = tables.trial_rows(keys, ids=ids, state=state)
    params = _external_params(tables.param_rows(ids=ids, state=state))
    if (rows["state"] == "WAITING").any():  # an enqueued cell: its params wait in fixed_params
        waiting = set(rows.loc[rows["state"] == "WAITING", "trial_id"].astype(int))
        for tid, _key, text in tables.system_attr_rows([FIXED_PARAMS_ATTR], ids=ids, state=state):
            if int(tid) in waiting and not params.get(int(tid)):
                value = json_or_text(text)
                params[int(tid)] = dict(value) if isinstance(value, dict) else {}
    last = tables.last_evaluations(ids=ids, state=state)

    trial_ids = rows["trial_id"].astype("int64").to_numpy()
    per_trial = [params.get(int(tid), {}) for tid in trial_ids]
    frame = pd.DataFrame({"number": rows["number"].astype("int64"), "trial_id": trial_ids, "state": rows["state"]})
    frame["value"] = rows["value"]  # ∞ as Optuna stores it, read in lpstudy.db.study_queries.stored_floats
    for f in run_fields:  # the trial's attribute, else its parameter (trials older than the attribute)
        convert = read_p if f.type is P else to_float
        texts = rows[f.name]
        column = numbers_of(texts, convert)
        absent = (texts.isna() | (texts == "null")).to_numpy()  # JSON's null is the text null
        from_params = p_of_params if f.type is P else lambda params, name=f.name: to_float(params.get(name))
        for i in np.flatnonzero(absent):
            column[i] = from_params(per_trial[i])
        frame[f.name] = column
    for name in SUMMARY_FIELDS:
        if name in bool_fields:
            frame[name] = _decoded(rows[name], lambda v: bool(v) if v is not None else False)
        elif name == "device":
            frame[name] = _decoded(rows[name], lambda v: None if v is None else str(v))
        else:
            frame[name] = numbers_of(rows[name], to_float)
    for name in who:
        if name == "pid":
            frame[name] = numbers_of(rows[name], to_float)
        else:
            frame[name] = _decoded(rows[name], lambda v: None if v is None else str(v))
    frame["datetime_start"] = rows["datetime_start"]
    frame["datetime_complete"] = rows["datetime_complete"]
    names = sorted({name for d in per_trial for name in d})
    for name in names:  # every searched or fixed parameter, under param_<name>
        values = [d.get(name, math.nan) for d in per_trial]
        if name == "p":
            values = [read_p(v) if name in d else math.nan for v, d in zip(values, per_trial)]
        frame[f"param_{name}"] = pd.Series(values, index=frame.index)
    last = last.set_index("trial_id")[["last_step", "last_val_loss", "n_evals"]]
    return frame, last
