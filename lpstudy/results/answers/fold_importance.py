"""How much of the loss the compared field explains within folds, measured rather than ranked.

The within-fold two-way ANOVA (loss ~ arm + fold, fold a block; type II sums of squares through
statsmodels' ols and anova_lm) on the folds every arm ran, so the design is balanced and type II
equals the classical decomposition. The effect size is the arm's partial ω² (Olejnik & Algina 2003:
(SS_arm − df_arm·MS_err) / (SS_arm + (N − df_arm)·MS_err)), less biased than η², which with 4
groups of 3 folds is about a third from noise alone. Next to it: a bootstrap interval (folds
resampled with replacement), a permutation p-value (the arm labels permuted within each fold,
which is what "no effect" means here), and what noise alone gives (partial η² and ω² under those
permutations, their 95th percentile).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

N_RESAMPLES = 999


def _sums_of_squares(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(SS_arm, SS_error) of tables (..., arms, folds) with both factors' main effects (balanced)."""
    grand = y.mean(axis=(-2, -1), keepdims=True)
    arm = y.mean(axis=-1, keepdims=True)
    fold = y.mean(axis=-2, keepdims=True)
    ss_arm = y.shape[-1] * ((arm - grand) ** 2).sum(axis=(-2, -1))
    ss_err = ((y - arm - fold + grand) ** 2).sum(axis=(-2, -1))
    return ss_arm, ss_err


def _omega(ss_arm, ss_err, a: int, f: int):
    df_arm, df_err = a - 1, (a - 1) * (f - 1)
    ms_err = ss_err / df_err
    with np.errstate(invalid="ignore", divide="ignore"):
        omega = (ss_arm - df_arm * ms_err) / (ss_arm + (a * f - df_arm) * ms_err)
        eta = ss_arm / (ss_arm + ss_err)
    return np.clip(omega, 0.0, 1.0), eta


def anova_table(table: pd.DataFrame) -> pd.DataFrame:
    """statsmodels' type II ANOVA of loss ~ C(arm) + C(fold) on an arms × folds table."""
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    long = table.stack().rename("loss").rename_axis(["arm", "fold"]).reset_index()
    long["arm"], long["fold"] = long["arm"].astype(str), long["fold"].astype(str)
    return anova_lm(ols("loss ~ C(arm) + C(fold)", data=long).fit(), typ=2)


def fold_importance(table: pd.DataFrame, field: str, seed: int = 0) -> dict:
    """The importance entry of an answer (see lpstudy.results.answers) from an arms × folds table of
    losses (NaN: no loss): the field's partial ω² within folds with its bootstrap interval, the
    permutation p-value, and noise alone's 95th percentile; shares empty and a reason where it
    cannot be estimated (fewer than two arms or two folds that every arm ran)."""
    complete = table.dropna(axis=1, how="any")
    a, f = complete.shape
    if a < 2 or f < 2:
        return {"shares": {}, "low": {}, "high": {}, "null": None, "reason":
                f"too few folds that every {field} ran to measure its share (needs 2 arms on 2 common folds)"}
    anova = anova_table(complete)
    ss_arm, ss_err = float(anova.loc["C(arm)", "sum_sq"]), float(anova.loc["Residual", "sum_sq"])
    omega, eta = _omega(ss_arm, ss_err, a, f)
    y = complete.to_numpy(dtype="float64")
    rng = np.random.default_rng(seed)
    # permutations: the arm labels shuffled within each fold
    order = np.argsort(rng.random((N_RESAMPLES, a, f)), axis=1)
    permuted = np.take_along_axis(np.broadcast_to(y, (N_RESAMPLES, a, f)), order, axis=1)
    null_omega, null_eta = _omega(*_sums_of_squares(permuted), a, f)
    p_value = float((1 + np.sum(null_eta >= eta - 1e-12)) / (1 + N_RESAMPLES))
    # bootstrap: folds drawn with replacement
    boot = y[:, rng.integers(0, f, (N_RESAMPLES, f))].transpose(1, 0, 2)
    boot_omega, _ = _omega(*_sums_of_squares(boot), a, f)
    low, high = np.nanpercentile(boot_omega, [2.5, 97.5])
    return {"shares": {field: float(omega)}, "low": {field: float(low)}, "high": {field: float(high)},
            "null": float(np.percentile(null_omega, 95)), "p_value": p_value, "eta_squared": float(eta),
            "eta_squared_null": float(np.mean(null_eta)), "n_folds": int(f), "n_arms": int(a),
            "reason": (f"{field} is the only field this study varies (fold is a block, not a cause): its bar is "
                       f"{field}'s partial ω² within folds, with a bootstrap interval, next to what noise alone "
                       f"gives; not a ranking")}
