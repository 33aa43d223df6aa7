"""Equal-budget comparisons (`lpstudy compare`): the paired table of arms and their tuning budgets."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.analysis.effect import paired_comparison
from lpstudy.results.analysis.intervals import t_interval
from lpstudy.results.analysis.selection import finished, successful


ARM_COLUMNS = ("arm", "n_pairs", "n_excluded", "mean_loss", "ref_mean_loss", "mean_diff", "ci_low",
               "ci_high", "relative_diff", "p_value")


def paired_arms(trials: pd.DataFrame, reference: str, arm: str = "arm", pair_on: str = "fold",
                confidence: float = 0.95) -> pd.DataFrame:
    """For the replicate runs of a comparison (a trials frame with an `arm` column): per arm, the
    paired difference loss(arm) − loss(reference arm) across folds with its t interval, as
    paired_comparison does for p. Negative mean_diff: the arm beats the reference. A fold where
    either run diverged or is missing is left out (n_excluded). The reference arm is first."""
    from scipy.special import stdtr

    done = finished(trials)
    done = done[done[arm].notna() & done[pair_on].notna()]
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "arm" else "float64") for c in ARM_COLUMNS})
    if done.empty or reference not in set(done[arm]):
        return empty
    cells = done.groupby([arm, pair_on], sort=False).agg(loss=("loss", "mean"), diverged=("diverged", "any"))
    cells.loc[cells["diverged"], "loss"] = math.nan
    table = cells["loss"].unstack(pair_on)
    ref = table.loc[reference]
    order = [reference, *[a for a in dict.fromkeys(done[arm]) if a != reference]]
    rows = []
    for name in order:
        losses = table.loc[name]
        both = losses.notna() & ref.notna()
        diff = (losses - ref)[both]
        mean, low, high = t_interval(diff, confidence)
        std = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan
        ref_mean = float(ref[both].mean()) if both.any() else math.nan
        p_value = (float(2 * stdtr(len(diff) - 1, -abs(mean / (std / math.sqrt(len(diff))))))
                   if len(diff) > 1 and std > 0 else math.nan)
        ran = len(cells.loc[name])  # folds of this arm with a completed run, diverged or not
        rows.append({"arm": name, "n_pairs": int(both.sum()), "n_excluded": ran - int(both.sum()),
                     "mean_loss": float(losses[both].mean()) if both.any() else math.nan,
                     "ref_mean_loss": ref_mean, "mean_diff": mean, "ci_low": low, "ci_high": high,
                     "relative_diff": mean / ref_mean if ref_mean else math.nan, "p_value": p_value})
    return pd.DataFrame(rows, columns=list(ARM_COLUMNS))


def tuning_summary(trials: pd.DataFrame, arm: str = "arm") -> pd.DataFrame:
    """Per arm of a comparison's tuning studies: trials spent (COMPLETE, PRUNED, RUNNING or
    WAITING), completed, pruned, diverged, and the best trial's loss, lr and gain_init."""
    rows = []
    for name, group in trials.groupby(arm, sort=False):
        ok = successful(group)
        best = ok.sort_values(["loss", "number"]).iloc[0] if len(ok) else None
        rows.append({"arm": name, "spent": int(group["state"].isin(["COMPLETE", "PRUNED", "RUNNING", "WAITING"]).sum()),
                     "complete": int((group["state"] == "COMPLETE").sum()),
                     "pruned": int((group["state"] == "PRUNED").sum()),
                     "diverged": int(finished(group)["diverged"].astype(bool).sum()),
                     "best_loss": float(best["loss"]) if best is not None else math.nan,
                     "best_lr": float(best["lr"]) if best is not None else math.nan,
                     "best_gain_init": float(best["gain_init"]) if best is not None else math.nan})
    return pd.DataFrame(rows, columns=["arm", "spent", "complete", "pruned", "diverged", "best_loss", "best_lr",
                                       "best_gain_init"])
