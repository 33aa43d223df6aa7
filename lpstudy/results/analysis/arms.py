"""Equal-budget comparisons (`lpstudy compare`): the paired table of arms and their tuning budgets."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.analysis.paired import fold_losses, paired_differences
from lpstudy.results.analysis.selection import best_trial, finished


ARM_COLUMNS = ("arm", "n_pairs", "n_excluded", "mean_loss", "ref_mean_loss", "mean_diff", "ci_low",
               "ci_high", "relative_diff", "p_value")


def paired_arms(trials: pd.DataFrame, reference: str, arm: str = "arm", pair_on: str = "fold",
                confidence: float = 0.95) -> pd.DataFrame:
    """For the replicate runs of a comparison (a trials frame with an `arm` column): per arm, the
    paired difference loss(arm) − loss(reference arm) across folds with its t interval
    (paired.paired_differences, as paired_comparison does for p). Negative mean_diff: the arm
    beats the reference. A fold where either run diverged or is missing is left out (n_excluded).
    The reference arm is first, the others in the order they appear."""
    stats = paired_differences(fold_losses(trials, arm, pair_on), reference, confidence)
    if stats.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "arm" else "float64") for c in ARM_COLUMNS})
    return stats.rename_axis("arm").reset_index()[list(ARM_COLUMNS)]


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
