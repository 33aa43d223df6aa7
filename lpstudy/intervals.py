"""Confidence intervals, each formula written once, for every layer that gives one.

- Student's t around a mean with its standard error (`interval`), the one use of t's quantile;
- that standard error corrected for K-fold cross-validation (`corrected_stats`; with seeds inside the
  folds, on the partition's share of the spread only, `variance_components`): fold k's model trains
  on the other K − 1 parts, so the folds share training text and the plain variance of their mean
  claims too much. Nadeau & Bengio's corrected resampled t ("Inference for the generalization error",
  Machine Learning 52, 2003) multiplies the sample variance of n values by 1/n + n_test/n_train, with
  n_test/n_train = 1/(K − 1) for K-fold CV (`share_ratio`), or by 1/n + ρ/(1 − ρ) at another fold
  correlation ρ (`rho_ratio`), and keeps n − 1 degrees of freedom;
- Wilson's score interval of a rate (`wilson_interval`; Wilson, "Probable inference, the law of
  succession, and statistical inference", JASA 22, 1927), statsmodels' `proportion_confint`.

Below the study and the read side alike: the search's race (lpstudy/design/intensify.py, the interval
`export` and `status` give the best configuration), the verdicts (lpstudy/results/answers/fold_tests.py),
the pages' per-p means and rates (lpstudy/results/analysis/intervals.py) and the replay benchmark's
shares (lpstudy/results/replay/scores.py) read them from here. Every function but the Wilson interval
works on arrays: the last axis holds the folds, the leading axes anything.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np


def share_ratio(k: int) -> float:
    """n_test / n_train of K-fold cross-validation: 1/(K − 1)."""
    return 1.0 / (k - 1)


def rho_ratio(rho):
    """The correction's second term at fold correlation ρ: ρ / (1 − ρ) (1/(K − 1) at ρ = 1/K)."""
    rho = np.asarray(rho, dtype="float64")
    return rho / (1.0 - rho)


def corrected_stats(diffs, k: int, rho=None, cells=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, standard error, degrees of freedom) of the differences along the last axis (NaN left
    out), the variance corrected for K-fold CV: var × (1/n + 1/(K − 1)), or var × (1/n + ρ/(1 − ρ))
    at another fold correlation ρ (broadcast against the leading axes). NaN where n < 2, and where the
    differences do not vary at all (`not_varying`): a zero variance is no estimate of the spread, and a t
    that divides by it would decide by no spread at all, so every test read from here leaves them undecided.

    cells (one label per position of the last axis; None: every position its own cell): positions
    of one cell are runs of one (fold[, repeat]) with different training seeds. Then the correction
    is applied to the partition's share of the spread only (variance_components): training noise is
    independent from run to run whatever the folds share, so averaging seeds inside each fold shrinks
    it as 1/S, while the folds' shared training text still bounds the rest."""
    x = np.asarray(diffs, dtype="float64")
    if cells is not None and len(np.unique(np.asarray(cells))) < np.shape(diffs)[-1]:
        mean, se, df = _seeded_stats(diffs, k, rho, cells)
        return mean, np.where(not_varying(x), np.nan, se), df
    n = np.sum(~np.isnan(x), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an arm without folds: NaN, said by n
        mean = np.nanmean(x, axis=-1) if x.size else np.full(x.shape[:-1], np.nan)
        var = np.nanvar(x, axis=-1, ddof=1) if x.size else np.full(x.shape[:-1], np.nan)
        se = np.sqrt(var * (1.0 / n + (share_ratio(k) if rho is None else rho_ratio(rho))))
    se = np.where((n >= 2) & ~not_varying(x), se, np.nan)
    return mean, se, (n - 1).astype("float64")


def not_varying(values) -> np.ndarray:
    """Along the last axis (NaN left out): whether there are two values or more and all are the same, up
    to rounding (a spread within 1e-9 of the largest magnitude, or of 1). Real float losses never do
    this; counts (loss spikes: 0 in every run) and steps read at an evaluation interval do."""
    x = np.asarray(values, dtype="float64")
    n = np.sum(~np.isnan(x), axis=-1)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row without values: not varying is False, said by n
        spread = np.nanmax(x, axis=-1) - np.nanmin(x, axis=-1) if x.size else np.zeros(x.shape[:-1])
        scale = np.fmax(1.0, np.nanmax(np.abs(x), axis=-1)) if x.size else np.ones(x.shape[:-1])
    flat: np.ndarray = (n >= 2) & (spread <= 1e-9 * scale)
    return flat


@dataclass(frozen=True, eq=False)
class VarianceComponents:
    """The two sources of a difference's spread (variance_components): arrays of shape (...,), the
    leading axes of the differences given (one entry per arm; per (study, arm) where planted studies
    are read at once), but means."""

    means: np.ndarray  # the cell means, shape (..., cells): one per cell label, in the labels' first order
    cells: np.ndarray  # the cells with a run (float)
    df_seed: np.ndarray  # the within-cell degrees of freedom, Σ (n_c − 1) (float)
    seed_var: np.ndarray  # the within-cell mean square: σ²_seed, the training noise (NaN without two seeds in some cell)
    cell_var: np.ndarray  # the spread (sample variance) of the cell means
    partition_var: np.ndarray  # cell_var − seed_var · inv_seeds, floored at 0: σ²_fold as the folds show it
    inv_seeds: np.ndarray  # mean(1/n_c) over the cells with a run


def variance_components(diffs, cells) -> VarianceComponents:
    """The two sources of a difference's spread, from runs grouped in cells (a fold, or a (repeat,
    fold), each run with its own training seed), along the last axis of diffs, by a one-way
    random-effects ANOVA (the method of moments; Searle, Casella & McCulloch, "Variance Components",
    1992, ch. 3): seed_var, the within-cell mean square (training noise, σ²_seed; NaN without two seeds
    in some cell); cell_var, the spread of the cell means; partition_var, what of cell_var the
    seeds do not explain, cell_var − seed_var · mean(1/n_c), floored at 0 (the partition's share,
    σ²_fold as the folds show it). Also: means (the cell means, shape (..., cells)), cells (cells with a
    run), df_seed (the within-cell degrees of freedom), inv_seeds (mean(1/n_c) over those cells)."""
    x = np.asarray(diffs, dtype="float64")
    labels = np.asarray(cells)
    ids = list(dict.fromkeys(labels.tolist()))
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        groups = [x[..., labels == c] for c in ids]
        counts = np.stack([np.sum(~np.isnan(g), axis=-1) for g in groups], axis=-1)
        means = np.stack([np.nanmean(g, axis=-1) for g in groups], axis=-1)
        squares = np.stack([np.nansum((g - np.nanmean(g, axis=-1, keepdims=True)) ** 2, axis=-1) for g in groups], axis=-1)
        present = counts > 0
        n_cells = present.sum(axis=-1)
        df_seed = np.sum(np.maximum(counts - 1, 0), axis=-1)
        seed_var = np.where(df_seed > 0, squares.sum(axis=-1) / df_seed, np.nan)
        cell_var = np.nanvar(means, axis=-1, ddof=1)
        inv_seeds = np.nanmean(np.where(present, 1.0 / counts, np.nan), axis=-1)
        partition_var = np.where(np.isfinite(seed_var), np.maximum(cell_var - seed_var * inv_seeds, 0.0), cell_var)
    return VarianceComponents(means=means, cells=n_cells.astype("float64"), df_seed=df_seed.astype("float64"),
                              seed_var=seed_var, cell_var=cell_var, partition_var=partition_var, inv_seeds=inv_seeds)


def _seeded_stats(diffs, k: int, rho, cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """corrected_stats over cells of several seeds: the mean of the C cell means, with

        var = cell_var / C + r · partition_var        (r = 1/(K − 1), or ρ/(1 − ρ))

    the cell means' own spread over C (unbiased for the seeds' share and the folds' observed spread)
    plus the overlap term of Nadeau & Bengio (2003) on the partition's share alone (with R repeats,
    C = R·K: Bouckaert & Frank 2004). One seed per cell gives cell_var · (1/C + r), the corrected t
    itself. Degrees of freedom by Welch–Satterthwaite (Satterthwaite, Biometrics Bulletin 2, 1946) for
    the linear combination (1/C + r) · cell_var − r · mean(1/n_c) · seed_var of the two mean squares;
    C − 1 where the partition's share is floored at 0."""
    parts = variance_components(diffs, cells)
    c, cell_var, seed_var = parts.cells, parts.cell_var, parts.seed_var
    ratio = share_ratio(k) if rho is None else rho_ratio(rho)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a cell-less arm: NaN, said by C
        mean = np.nanmean(parts.means, axis=-1)
        var = cell_var / c + ratio * parts.partition_var
        a, b = 1.0 / c + ratio, ratio * parts.inv_seeds * seed_var
        satterthwaite = var ** 2 / ((a * cell_var) ** 2 / (c - 1) + b ** 2 / parts.df_seed)
        floored = ~(parts.partition_var > 0) | ~np.isfinite(seed_var)
        df = np.where(floored, c - 1, np.clip(satterthwaite, 1.0, c - 1 + parts.df_seed))
        se = np.where(c >= 2, np.sqrt(var), np.nan)
    return mean, se, np.asarray(df, dtype="float64")


def interval(mean, se, df, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval (low, high) around mean with standard error se and df degrees of freedom."""
    from scipy.special import stdtrit  # scipy.special imports in a third of scipy.stats' time

    with np.errstate(invalid="ignore"):
        half = stdtrit(df, 0.5 + confidence / 2) * np.asarray(se)
    return np.asarray(mean) - half, np.asarray(mean) + half


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of the rate successes / n; (NaN, NaN) when n = 0, as the rate itself:
    no runs, no estimate. successes may be a fractional count: a search's configurations each count
    their share of diverged runs (lpstudy.results.analysis.stability)."""
    if n <= 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint  # imported when a rate is first drawn

    alpha = round(1 - confidence, 12)  # 1 − 0.95 is 0.05 + 4e-17 in floating point: 1 − 1e-16 at k = n, not 1
    low, high = proportion_confint(float(successes), int(n), alpha=alpha, method="wilson")
    return float(low), float(high)
