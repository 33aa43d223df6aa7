"""A study read through Optuna's storage API (a journal, a storage proxy, an unknown schema) copied
into Optuna's own tables in an in-memory SQLite database, so that every read of a study is the same
SQL (lpstudy.db.study_queries) whatever holds it: the read side has one trial-frame builder, and
where its rows come from is the reader's business (lpstudy.db.trial_reader).

The rows are those Optuna's RDBStorage writes for the same trials: its own models' tables
(optuna.storages._rdb.models), values and intermediate values stored by its own conversions (a value
and its type: FINITE, INF_POS, INF_NEG, NAN), attributes as JSON texts, parameters as internal floats
with their distribution's JSON. The copy keeps the trials' ids, so that a reader's ids are the
storage's. It is made per read and only read.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from lpstudy.db import optuna_private

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def copy_study(frozen_study: Any, trials: list[Any]) -> tuple[Engine, int]:
    """(an in-memory SQLite engine holding the study and its trials in Optuna's tables, its study_id)."""
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models

    engine = sa.create_engine("sqlite://", poolclass=sa.pool.StaticPool,
                              connect_args={"check_same_thread": False})
    models.BaseModel.metadata.create_all(engine)
    sid = int(optuna_private.study_id(frozen_study))
    T = models.BaseModel.metadata.tables
    dumps = json.dumps
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in (
        "trials", "trial_values", "trial_params", "trial_user_attributes", "trial_system_attributes",
        "trial_intermediate_values")}
    for trial in trials:
        tid = int(optuna_private.trial_id(trial))
        rows["trials"].append({"trial_id": tid, "number": trial.number, "study_id": sid, "state": trial.state.name,
                               "datetime_start": trial.datetime_start, "datetime_complete": trial.datetime_complete})
        for objective, value in enumerate(trial.values or []):
            stored, kind = models.TrialValueModel.value_to_stored_repr(value)
            rows["trial_values"].append({"trial_id": tid, "objective": objective, "value": stored,
                                         "value_type": kind.name})
        for name, value in trial.params.items():
            dist = trial.distributions[name]
            rows["trial_params"].append({"trial_id": tid, "param_name": name,
                                         "param_value": dist.to_internal_repr(value),
                                         "distribution_json": distribution_to_json(dist)})
        for table, attrs in (("trial_user_attributes", trial.user_attrs), ("trial_system_attributes", trial.system_attrs)):
            rows[table].extend({"trial_id": tid, "key": key, "value_json": dumps(value)} for key, value in attrs.items())
        for step, value in trial.intermediate_values.items():
            reported, kind_of = models.TrialIntermediateValueModel.intermediate_value_to_stored_repr(value)
            rows["trial_intermediate_values"].append({"trial_id": tid, "step": int(step), "intermediate_value": reported,
                                                      "intermediate_value_type": kind_of.name})
    with engine.begin() as conn:
        conn.execute(T["studies"].insert(), [{"study_id": sid, "study_name": frozen_study.study_name}])
        conn.execute(T["study_directions"].insert(), [{"study_id": sid, "objective": i, "direction": d.name}
                                                      for i, d in enumerate(frozen_study.directions)])
        for table, attrs in (("study_user_attributes", frozen_study.user_attrs),
                             ("study_system_attributes", frozen_study.system_attrs)):
            if attrs:
                conn.execute(T[table].insert(), [{"study_id": sid, "key": k, "value_json": dumps(v)}
                                                 for k, v in attrs.items()])
        for table, table_rows in rows.items():
            if table_rows:
                conn.execute(T[table].insert(), table_rows)
    return engine, sid
