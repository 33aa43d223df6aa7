"""Confidence intervals, each formula written once, for every layer that gives one.

- Student's t around a mean with its standard error (`interval`), the one use of t's quantile;
- that standard error corrected for K-fold cross-validation (`corrected_stats`): fold k's model trains
  on the other K − 1 parts, so the folds share training text and the plain variance of their mean
  claims too much. Nadeau & Bengio's corrected resampled t ("Inference for the generalization error",
  Machine Learning 52, 2003) multiplies the sample variance of n values by 1/n + n_test/n_train, with
  n_test/n_train = 1/(K − 1) for K-fold CV (`share_ratio`), or by 1/n + ρ/(1 − ρ) at another fold
  correlation ρ (`rho_ratio`), and keeps n − 1 degrees of freedom;
- Wilson's score interval of a rate (`wilson_interval`; Wilson, "Probable inference, the law of
  succession, and statistical inference", JASA 22, 1927), statsmodels' `proportion_confint`.

Below the study and the read side alike: the search's race (lpstudy/study/intensify.py, the interval
`export` and `status` give the best configuration), the verdicts (lpstudy/results/answers/fold_tests.py),
the pages' per-p means and rates (lpstudy/results/analysis/intervals.py) and the replay benchmark's
shares (lpstudy/results/replay/scores.py) read them from here. Every function but the Wilson interval
works on arrays: the last axis holds the folds, the leading axes anything.
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def share_ratio(k: int) -> float:
    """n_test / n_train of K-fold cross-validation: 1/(K − 1)."""
    return 1.0 / (k - 1)


def rho_ratio(rho):
    """The correction's second term at fold correlation ρ: ρ / (1 − ρ) (1/(K − 1) at ρ = 1/K)."""
    rho = np.asarray(rho, dtype="float64")
    return rho / (1.0 - rho)


def corrected_stats(diffs, k: int, rho=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, standard error, degrees of freedom) of the values along the last axis (NaN left
    out), the variance corrected for K-fold CV: var × (1/n + 1/(K − 1)), or var × (1/n + ρ/(1 − ρ))
    at another fold correlation ρ (broadcast against the leading axes). NaN where n < 2."""
    x = np.asarray(diffs, dtype="float64")
    n = np.sum(~np.isnan(x), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an arm without folds: NaN, said by n
        mean = np.nanmean(x, axis=-1) if x.size else np.full(x.shape[:-1], np.nan)
        var = np.nanvar(x, axis=-1, ddof=1) if x.size else np.full(x.shape[:-1], np.nan)
        se = np.sqrt(var * (1.0 / n + (share_ratio(k) if rho is None else rho_ratio(rho))))
    se = np.where(n >= 2, se, np.nan)
    return mean, se, (n - 1).astype("float64")


def interval(mean, se, df, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval (low, high) around mean with standard error se and df degrees of freedom."""
    from scipy.special import stdtrit  # scipy.special imports in a third of scipy.stats' time

    with np.errstate(invalid="ignore"):
        half = stdtrit(df, 0.5 + confidence / 2) * np.asarray(se)
    return np.asarray(mean) - half, np.asarray(mean) + half


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of the rate successes / n; (NaN, NaN) when n = 0, as the rate itself:
    no runs, no estimate."""
    if n <= 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint  # imported when a rate is first drawn

    alpha = round(1 - confidence, 12)  # 1 − 0.95 is 0.05 + 4e-17 in floating point: 1 − 1e-16 at k = n, not 1
    low, high = proportion_confint(int(successes), int(n), alpha=alpha, method="wilson")
    return float(low), float(high)
