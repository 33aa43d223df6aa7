"""A comparison (lpstudy compare) read back: its plan, every arm's tuning trials and replicate
runs as trials frames with an `arm` column, and the paired table against the reference arm
(lpstudy.results.analysis.paired_arms). Read-only; the dashboard's Compare page and `lpstudy
compare` show the same numbers."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lpstudy.db.optuna_storage import open_storage
from lpstudy.errors import UserError
from lpstudy.results import analysis as A
from lpstudy.results.frames import load_trials
from lpstudy.study.compare import ComparePlan, label, load_plan


@dataclass
class CompareData:
    name: str
    plan: ComparePlan
    tuning: pd.DataFrame  # the arms' tuning trials, with `arm`
    folds: pd.DataFrame  # the arms' replicate runs, with `arm`
    reference: str  # the reference arm's label

    @property
    def paired(self) -> pd.DataFrame:
        return A.paired_arms(self.folds, self.reference)

    @property
    def budgets(self) -> pd.DataFrame:
        return A.tuning_summary(self.tuning)


def is_comparison(storage_url: str | None, name: str) -> bool:
    return load_plan(open_storage(storage_url, readonly=True), name) is not None


def load_compare(storage_url: str | None, name: str) -> CompareData:
    """The comparison NAME; UserError when there is none of that name."""
    storage = open_storage(storage_url, readonly=True)
    plan = load_plan(storage, name)
    if plan is None:
        raise UserError(f"no comparison named {name!r} in {storage.display_url}; create it with `lpstudy compare`")
    existing = {s.study_name for s in storage.optuna.get_all_studies()}
    tuning, folds = [], []
    for value in plan.values:
        arm = label(plan.factor, value)
        for study, frames in ((plan.tune_study(name, value), tuning), (plan.folds_study(name, value), folds)):
            if study in existing:
                frames.append(load_trials(storage.url, study).assign(arm=arm))
    join = lambda frames: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(  # noqa: E731
        columns=["arm", "number", "state", "value", "p", "lr", "gain_init", "fold", "diverged", "final_val_loss"])
    return CompareData(name, plan, join(tuning), join(folds), label(plan.factor, plan.reference))
