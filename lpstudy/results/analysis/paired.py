"""Paired differences across folds, the one computation behind the paired comparison of p
(effect.paired_comparison) and of a comparison's arms (arms.paired_arms): per group, the
difference loss(group) − loss(reference) on each fold both ran, with its t interval."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from lpstudy.results.analysis.intervals import t_interval
from lpstudy.results.analysis.selection import finished

PAIRED_STATS = ("n_pairs", "n_excluded", "mean_loss", "ref_mean_loss", "mean_diff", "std_diff", "ci_low",
                "ci_high", "relative_diff", "t_stat", "p_value")


def fold_losses(trials: pd.DataFrame, by: str, pair_on: str = "fold") -> pd.Series:
    """One loss per (group, fold) of the COMPLETE trials: the mean of the cell's runs, NaN when any
    of them diverged; indexed by (by, pair_on), the groups in the order they first appear."""
    done = finished(trials)
    done = done[done[by].notna() & done[pair_on].notna()]
    cells = done.groupby([by, pair_on], sort=False).agg(loss=("loss", "mean"), diverged=("diverged", "any"))
    return cells["loss"].where(~cells["diverged"].astype(bool))


def paired_differences(losses: pd.Series, reference: Any, confidence: float = 0.95) -> pd.DataFrame:
    """For each group of fold_losses (the reference included, first): the folds where both the
    group and the reference have a loss are its pairs (n_excluded: the group's other folds that
    ran), and over them mean_loss, ref_mean_loss, the mean difference with its std (ddof 1), the
    t interval (ci_low, ci_high), relative_diff = mean_diff / ref_mean_loss, and the two-sided
    paired t test (t_stat, p_value; NaN with fewer than two pairs or no spread). Negative mean_diff:
    the group beats the reference. Indexed by group; empty when the reference has no run."""
    from scipy.special import stdtr

    groups = list(dict.fromkeys(losses.index.get_level_values(0)))
    if reference not in groups:
        return pd.DataFrame(columns=list(PAIRED_STATS), dtype="float64")
    table = losses.unstack(1)
    ref = table.loc[reference]
    names, rows = [], []
    for name in [reference, *[g for g in groups if g != reference]]:
        group = table.loc[name]
        both = group.notna() & ref.notna()
        diff = (group - ref)[both]
        mean, low, high = t_interval(diff, confidence)
        std = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan
        ref_mean = float(ref[both].mean()) if both.any() else math.nan
        if len(diff) > 1 and std > 0:
            t_stat = mean / (std / math.sqrt(len(diff)))
            p_value = float(2 * stdtr(len(diff) - 1, -abs(t_stat)))
        else:
            t_stat = p_value = math.nan
        ran = len(losses.loc[name])  # folds of this group with a completed run, diverged or not
        names.append(name)
        rows.append({"n_pairs": int(both.sum()), "n_excluded": ran - int(both.sum()),
                     "mean_loss": float(group[both].mean()) if both.any() else math.nan,
                     "ref_mean_loss": ref_mean, "mean_diff": mean, "std_diff": std, "ci_low": low,
                     "ci_high": high, "relative_diff": mean / ref_mean if ref_mean else math.nan,
                     "t_stat": t_stat, "p_value": p_value})
    return pd.DataFrame(rows, index=names, columns=list(PAIRED_STATS))
