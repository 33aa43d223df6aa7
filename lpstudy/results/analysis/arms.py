"""Equal-budget comparisons (`lpstudy compare`): the arms' tuning budgets (their verdicts against the
reference are the answer's: lpstudy.results.answers)."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.analysis.selection import best_trial, finished


def tuning_summary(trials: pd.DataFrame, arm: str = "arm") -> pd.DataFrame:
    """Per arm of a comparison's tuning studies: trials spent (COMPLETE, PRUNED, RUNNING or
    WAITING), completed, pruned, diverged, and the best's loss, lr and gain_init: the configuration the
    arm's search returns where the frame marks it (`returned`, with `returned_folds`: best_folds, on how
    many folds it was measured, and `returned_mean`: best_loss, its mean loss over them, never its
    tuning fold's alone; lpstudy.results.reading.compare), else best_trial's own loss."""
    rows = []
    for name, group in trials.groupby(arm, sort=False):
        marked = group[group["returned"].fillna(False).astype(bool)] if "returned" in group else group.iloc[:0]
        best = best_trial(marked if len(marked) else group)  # lpstudy.design.best's rule on the arm's returned trial
        folds = float(marked["returned_folds"].iloc[0]) if len(marked) else math.nan
        rows.append({"arm": name, "spent": int(group["state"].isin(["COMPLETE", "PRUNED", "RUNNING", "WAITING"]).sum()),
                     "complete": int((group["state"] == "COMPLETE").sum()),
                     "pruned": int((group["state"] == "PRUNED").sum()),
                     "diverged": int(finished(group)["diverged"].astype(bool).sum()),
                     "best_loss": (float(marked["returned_mean"].iloc[0]) if len(marked) and "returned_mean" in marked
                                   else float(best["loss"]) if best is not None else math.nan),
                     "best_lr": float(best["lr"]) if best is not None else math.nan,
                     "best_gain_init": float(best["gain_init"]) if best is not None else math.nan,
                     "best_folds": folds})
    return pd.DataFrame(rows, columns=["arm", "spent", "complete", "pruned", "diverged", "best_loss", "best_lr",
                                       "best_gain_init", "best_folds"])
