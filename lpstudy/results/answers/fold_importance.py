"""How much of the loss the compared field explains within folds, measured rather than ranked, with the
folds' correlation taken into account as the verdicts take it.

The within-fold two-way ANOVA (loss ~ arm + fold, fold a block; type II sums of squares through
statsmodels' ols and anova_lm) on the folds every arm ran, so the design is balanced and type II
equals the classical decomposition. Its F test assumes the arm × fold residuals independent; in K-fold
cross-validation they are not: two folds' training texts overlap, and an arm's runs share its seed and
setting, so an arm's residuals correlate across folds (ρ) and its mean over the folds varies more than
the residual mean square says. Under the model the verdicts use (fold differences correlated at
ρ = 1/K, Nadeau and Bengio, "Inference for the generalization error", Machine Learning 52, 2003),
E[MS_arm] = σ²(1 − ρ)·(1 + Kρ/(1 − ρ)) where E[MS_err] = σ²(1 − ρ), so the corrected statistic

    F_c = F / (1 + K·ρ/(1 − ρ)),    ρ/(1 − ρ) = n_test/n_train = 1/(K − 1)    (fold_tests.share_ratio)

follows F(a − 1, (a − 1)(K − 1)) exactly when nothing differs: the multi-arm form of the corrected
resampled t (with two arms F_c is its square). The p-value is F_c's. (A within-fold permutation of
the arm labels treats the correlated part as an effect: 23–26 % of no-effect studies came out
"significant" with it; it is gone.)

The effect size is the arm's partial ω² = λ / (λ + N), λ the noncentrality of F_c's distribution.
The share shown is its median-unbiased estimate: the λ at which F(a − 1, (a − 1)(K − 1), λ) puts F_c
at its median (Steiger 2004's inversion at 50 %), so it always lies inside its own interval below (the
moment estimate of Olejnik and Algina, "Generalized eta and omega squared statistics", Psychological
Methods 8, 2003, df_arm·(F − 1) / (df_arm·(F − 1) + N), fell below the interval's lower end 0 in about
a third of no-effect studies; it is kept, unclipped, as `omega_squared`: a negative value says the
arms differ less than noise alone would make them). Its interval
is the noncentral-F interval (Steiger, "Beyond the F test: effect size confidence intervals and tests of
close fit in the analysis of variance and contrast analysis", Psychological Methods 9, 2004): the
noncentrality λ whose F(a − 1, (a − 1)(K − 1), λ) puts F_c at its 97.5th and 2.5th percentiles,
mapped by ω² = λ / (λ + N). It is exact for any number of folds, 3 to 10 included, where a bootstrap
over the folds has too few distinct resamples to say anything; its lower end is 0 where F_c is small.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lpstudy.results.answers.answer_types import Importance
from lpstudy.results.answers.fold_tests import share_ratio

CONFIDENCE = 0.95
N_NULL_DRAWS = 4000  # F draws for the mean η² that noise alone gives
LAMBDA_MAX = 1e6  # the largest noncentrality an interval end takes (ω² = 1 − 1e-4 at 100 runs)


def _sums_of_squares(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(SS_arm, SS_error) of tables (..., arms, folds) with both factors' main effects (balanced)."""
    grand = y.mean(axis=(-2, -1), keepdims=True)
    arm = y.mean(axis=-1, keepdims=True)
    fold = y.mean(axis=-2, keepdims=True)
    ss_arm = y.shape[-1] * ((arm - grand) ** 2).sum(axis=(-2, -1))
    ss_err = ((y - arm - fold + grand) ** 2).sum(axis=(-2, -1))
    return ss_arm, ss_err


def correlation_factor(k: int) -> float:
    """1 + K·ρ/(1 − ρ) at the verdicts' ρ = 1/K: how much more an arm's mean over K folds varies than
    independent residuals say (E[MS_arm] / E[MS_err] when nothing differs)."""
    return 1.0 + k * share_ratio(k)


def omega_squared(f_stat: float, df_arm: int, n: int) -> float:
    """Partial ω² from an F statistic (Olejnik and Algina 2003), unclipped."""
    return df_arm * (f_stat - 1.0) / (df_arm * (f_stat - 1.0) + n)


def noncentrality_interval(f_stat: float, df1: int, df2: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The interval of the noncentrality λ of F(df1, df2, λ) given an observed F (Steiger 2004): the λ
    at which F is the upper and the lower (1 − confidence)/2 point; 0 where even λ = 0 puts F lower."""
    tail = (1.0 - confidence) / 2
    return noncentrality_at(f_stat, df1, df2, 1.0 - tail), noncentrality_at(f_stat, df1, df2, tail)


def noncentrality_at(f_stat: float, df1: int, df2: int, target: float) -> float:
    """The λ at which F(df1, df2, λ)'s cdf at f_stat is target (0.5: the median-unbiased estimate of λ);
    0 where even λ = 0 puts it lower. The cdf falls as λ grows, so a higher target gives a lower λ."""
    from scipy.optimize import brentq
    from scipy.stats import f as central, ncf

    def cdf(lam: float) -> float:
        value = float(central.cdf(f_stat, df1, df2)) if lam <= 0 else float(ncf.cdf(f_stat, df1, df2, lam))
        return 0.0 if math.isnan(value) else value  # scipy's NaN far in the tail, where the cdf is 0

    def solve(target: float) -> float:
        if cdf(0.0) <= target:  # F is low even without an effect
            return 0.0
        if cdf(LAMBDA_MAX) > target:  # an effect so far beyond the noise that ω² is 1 to four digits
            return LAMBDA_MAX
        high = min(LAMBDA_MAX, max(10.0, 4 * df1 * f_stat))
        while cdf(high) > target:
            high = min(LAMBDA_MAX, high * 2)
        return float(brentq(lambda lam: cdf(lam) - target, 0.0, high, xtol=1e-6))

    return solve(target)


def anova_table(table: pd.DataFrame) -> pd.DataFrame:
    """statsmodels' type II ANOVA of loss ~ C(arm) + C(fold) on an arms × folds table."""
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    long = table.stack().rename("loss").rename_axis(["arm", "fold"]).reset_index()
    long["arm"], long["fold"] = long["arm"].astype(str), long["fold"].astype(str)
    return anova_lm(ols("loss ~ C(arm) + C(fold)", data=long).fit(), typ=2)


def corrected_f(y: np.ndarray, k: int) -> np.ndarray:
    """F_c of tables (..., arms, folds) of K-fold CV losses (NaN where the residuals have no spread)."""
    a, f = y.shape[-2:]
    ss_arm, ss_err = _sums_of_squares(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        f_c: np.ndarray = (ss_arm / (a - 1)) / (ss_err / ((a - 1) * (f - 1))) / correlation_factor(k)
    return f_c


def fold_importance(table: pd.DataFrame, field: str, k: int | None = None, seed: int = 0) -> Importance:
    """The importance part of an answer (answer_types.Importance) from an arms × folds table of
    losses (NaN: no loss) of a K-fold CV (k: K, the table's folds if None): the field's partial ω²
    within folds from the corrected F, its noncentral-F interval, the corrected F test's p-value,
    and noise alone's 95th percentile of ω² (the ω² at F's 95th percentile); shares empty and a
    reason where it cannot be estimated (fewer than two arms or two folds that every arm ran, no
    spread, or a loss that is not finite)."""
    from scipy.stats import f as f_dist

    complete = table.dropna(axis=1, how="any")
    a, f = complete.shape
    # K, not the table's R·K blocks: under the repeated-CV model (folds correlated at 1/K inside a repeat,
    # repeats independent) an arm's mean over R·K blocks varies (1 − ρ)σ²·(1/(RK) + (ρ/(1 − ρ))/R), so
    # E[MS_arm]/E[MS_err] = RK·(1/(RK) + 1/(R(K − 1))) = 1 + K/(K − 1): the factor of one CV, whatever R
    k = max(int(k or f), 2)
    if a < 2 or f < 2:
        return no_importance(f"too few folds that every {field} ran to measure its share "
                             "(needs 2 arms on 2 common folds)")
    y = complete.to_numpy(dtype="float64")
    if not np.isfinite(y).all():
        return no_importance(f"a loss that is not finite: {field}'s share is measured on finite losses only")
    anova = anova_table(complete)
    ss_arm, ss_err = float(anova.loc["C(arm)", "sum_sq"]), float(anova.loc["Residual", "sum_sq"])
    df1, df2, n = a - 1, (a - 1) * (f - 1), a * f
    if not ss_err > 0:
        return no_importance(f"the runs leave no spread within folds to measure {field}'s share against")
    f_c = (ss_arm / df1) / (ss_err / df2) / correlation_factor(k)
    lam_low, lam_high = noncentrality_interval(f_c, df1, df2)
    null_f = f_dist.ppf(0.95, df1, df2)
    draws = f_dist.rvs(df1, df2, size=N_NULL_DRAWS, random_state=np.random.default_rng(seed)) * correlation_factor(k)
    null_eta = draws * df1 / (draws * df1 + df2)  # η² = SS_arm / (SS_arm + SS_err) at those F
    lam_mid, lam_null = noncentrality_at(f_c, df1, df2, 0.5), noncentrality_at(float(null_f), df1, df2, 0.5)
    return Importance(
        shares={field: lam_mid / (lam_mid + n)}, low={field: lam_low / (lam_low + n)},
        high={field: lam_high / (lam_high + n)}, null=lam_null / (lam_null + n),
        omega_squared=omega_squared(f_c, df1, n), p_value=float(f_dist.sf(f_c, df1, df2)), f_corrected=float(f_c),
        eta_squared=ss_arm / (ss_arm + ss_err), eta_squared_null=float(np.mean(null_eta)),
        n_folds=int(f), n_arms=int(a), k=k, confidence=CONFIDENCE,
        method=(f"two-way ANOVA within folds, F corrected for the {k}-fold CV's correlation "
                f"(÷ {correlation_factor(k):.2f}, ρ = 1/K); partial ω² median-unbiased inside its noncentral-F "
                f"{100 * CONFIDENCE:.0f} % interval (Steiger 2004)"),
        reason=(f"{field} is the only field this study varies (fold is a block, not a cause): its bar is "
                f"{field}'s partial ω² within folds, with its {100 * CONFIDENCE:.0f} % interval, next to what "
                f"noise alone gives; not a ranking"))


def no_importance(reason: str) -> Importance:
    """An importance with no shares, and why."""
    return Importance(shares={}, low={}, high={}, null=None, reason=reason)

