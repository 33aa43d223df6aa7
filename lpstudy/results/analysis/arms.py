"""Equal-budget comparisons (`lpstudy compare`): the arms' tuning budgets (their verdicts against the
reference are the answer's: lpstudy.results.answers)."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.analysis.selection import best_trial, finished


def tuning_summary(trials: pd.DataFrame, arm: str = "arm") -> pd.DataFrame:
    """Per arm of a comparison's tuning studies: trials spent (COMPLETE, PRUNED, RUNNING or
    WAITING), completed, pruned, diverged, and the best trial's (best_trial) loss, lr and gain_init."""
    rows = []
    for name, group in trials.groupby(arm, sort=False):
        best = best_trial(group)  # lpstudy.study.best's rule, as every other page ranks
        rows.append({"arm": name, "spent": int(group["state"].isin(["COMPLETE", "PRUNED", "RUNNING", "WAITING"]).sum()),
                     "complete": int((group["state"] == "COMPLETE").sum()),
                     "pruned": int((group["state"] == "PRUNED").sum()),
                     "diverged": int(finished(group)["diverged"].astype(bool).sum()),
                     "best_loss": float(best["loss"]) if best is not None else math.nan,
                     "best_lr": float(best["lr"]) if best is not None else math.nan,
                     "best_gain_init": float(best["gain_init"]) if best is not None else math.nan})
    return pd.DataFrame(rows, columns=["arm", "spent", "complete", "pruned", "diverged", "best_loss", "best_lr",
                                       "best_gain_init"])
