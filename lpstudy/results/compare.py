"""A comparison (lpstudy compare) read back: its plan, every arm's tuning trials and replicate
runs as trials frames with an `arm` column, and the paired table against the reference arm
(lpstudy.results.analysis.paired_arms). Read-only; the dashboard's Compare page, `lpstudy
compare` and `lpstudy status` (render_compare) show the same numbers."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lpstudy.db.optuna_storage import open_storage
from lpstudy.errors import UserError
from lpstudy.results import analysis as A
from lpstudy.results.frames import load_trials
from lpstudy.study.compare import ComparePlan, load_plan


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


def load_compare(storage_url: str | None, name: str) -> CompareData:
    """The comparison NAME; UserError when there is none of that name."""
    storage = open_storage(storage_url, readonly=True)
    plan = load_plan(storage, name)
    if plan is None:
        raise UserError(f"no comparison named {name!r} in {storage.display_url}; create it with `lpstudy compare`")
    existing = {s.study_name for s in storage.optuna.get_all_studies()}
    tuning, folds = [], []
    for value in plan.values:
        arm = plan.label(value)
        for study, frames in ((plan.tune_study(name, value), tuning), (plan.folds_study(name, value), folds)):
            if study in existing:
                frames.append(load_trials(storage.url, study).assign(arm=arm))
    join = lambda frames: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(  # noqa: E731
        columns=["arm", "number", "state", "value", "p", "lr", "gain_init", "fold", "diverged", "final_val_loss"])
    return CompareData(name, plan, join(tuning), join(folds), plan.label(plan.reference))


def render_compare(url: str, study: str) -> None:
    """The arms' budgets and the paired table, as rich tables on standard output."""
    from rich.console import Console
    from rich.table import Table

    data = load_compare(url, study)
    console = Console()
    budgets = Table(title=f"tuning ({data.plan.budget} trials per arm)")
    for col in ("arm", "spent", "complete", "pruned", "diverged", "best loss", "lr", "gain_init"):
        budgets.add_column(col)
    for _, r in data.budgets.iterrows():
        budgets.add_row(r["arm"], str(r["spent"]), str(r["complete"]), str(r["pruned"]), str(r["diverged"]),
                        f"{r['best_loss']:.4f}", f"{r['best_lr']:.3g}", f"{r['best_gain_init']:.3g}")
    console.print(budgets)
    paired = data.paired
    if paired.empty:
        console.print(f"paired table: none yet (needs the {data.reference} arm and another on the same folds)")
        return
    table = Table(title=f"final validation loss on {data.plan.folds} folds, paired against {data.reference} (95 % CI)")
    for col in ("arm", "pairs", "mean", "diff", "95 % CI", "relative", "p-value"):
        table.add_column(col)
    for _, r in paired.iterrows():
        table.add_row(r["arm"], str(r["n_pairs"]), f"{r['mean_loss']:.4f}", f"{r['mean_diff']:+.4f}",
                      f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]", f"{100 * r['relative_diff']:+.2f} %",
                      f"{r['p_value']:.3g}")
    console.print(table)
