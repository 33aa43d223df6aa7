"""The tests behind every verdict: paired differences over the folds of one K-fold cross-validation,
with the variance corrected for the training text the folds share.

Fold k's model trains on the other K − 1 parts, so two folds share (K − 2)/(K − 1) of their training
text and their differences are correlated; the plain paired t-test then claims too much. Nadeau &
Bengio's corrected resampled t ("Inference for the generalization error", Machine Learning 52, 2003;
recommended by Bouckaert & Frank, "Evaluating the replicability of significance tests for comparing
learning algorithms", PAKDD 2004) multiplies the sample variance of the n differences by
1/n + n_test/n_train, with n_test/n_train = 1/(K − 1) for K-fold CV, and keeps Student's t with n − 1
degrees of freedom. It is the frequentist twin of the Bayesian correlated t-test (Corani & Benavoli
2015; Benavoli et al. 2017; the `baycomp` package, which the tests use as the oracle): both give the
same interval.

The decision rule, stated once (three regions of the difference d, lower loss wins; margin: the ROPE):
- better / worse: d beyond the ROPE, the two-sided minimum-effect test of |d| ≤ margin rejected
  (the 1 − alpha interval lies wholly below −margin, or wholly above +margin);
- equivalent: d within the ROPE, two one-sided tests (TOST, Schuirmann 1987) of |d| ≥ margin
  rejected (the 1 − 2·alpha interval, 90 %, lies inside ±margin: the interval TOST uses);
- undecided between: the interval straddles a ROPE boundary; `different` marks the arms whose
  interval still excludes 0 there ("different but within the ROPE": a difference too small to matter
  or not yet shown to be large).
The three regions exclude one another by construction (an interval below −margin cannot lie inside
±margin), so no arm is ever two things at once. Several arms against one reference: Holm's step-down
(statsmodels' multipletests) across the arms, each family of tests (beyond the ROPE, within it) on
its own, so the family-wise error of each stays at alpha. The test of "no difference" is reported
(p_value_difference) and Holm-adjusted too, but decides only `different`.

How far a verdict holds: the correction assumes the folds' differences correlate at ρ = 1/K, which
is not known for K-fold CV (no unbiased estimate of the variance exists from one CV: Bengio &
Grandvalet, "No unbiased estimator of the variance of K-fold cross-validation", JMLR 5, 2004).
holds_up_to_rho gives, per decided arm, the largest ρ at which its verdict still stands (the variance
factor 1/n + ρ/(1 − ρ), Nadeau & Bengio's form). A study that repeats its CV over new partitions and
seeds (r × K runs) is tested with Bouckaert & Frank's corrected repeated k-fold CV test (2004): the
mean and variance over all r·K differences, the variance × (1/(r·K) + 1/(K − 1)), r·K − 1 degrees of
freedom: the same formula with n = r·K, so every function here takes repeats as more positions.

Every function works on arrays: the last axis holds the folds (or the arms), the leading axes are
anything (many simulated studies at once), so a thousand planted studies take milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from lpstudy.intervals import corrected_stats as corrected_stats  # noqa: F401  (their one home; read here too)
from lpstudy.intervals import interval as interval  # noqa: F401
from lpstudy.intervals import rho_ratio as rho_ratio  # noqa: F401
from lpstudy.intervals import share_ratio as share_ratio  # noqa: F401
from lpstudy.intervals import VarianceComponents as VarianceComponents  # noqa: F401
from lpstudy.intervals import variance_components as variance_components  # noqa: F401

VERDICTS = ("better", "equivalent", "worse", "undecided")


def difference_p(mean: ArrayLike, se: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Two-sided p-value of "no difference" (Student's t, corrected standard error)."""
    from scipy.special import stdtr

    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(np.asarray(mean) / np.asarray(se))
        p: np.ndarray = 2.0 * stdtr(df, -t)  # scipy's ufunc: untyped here
        return p


def equivalence_p(mean: ArrayLike, se: ArrayLike, df: ArrayLike, margin: float | np.ndarray) -> np.ndarray:
    """TOST p-value of |difference| < margin: the larger of the two one-sided p-values."""
    from scipy.special import stdtr

    with np.errstate(invalid="ignore", divide="ignore"):
        lower: np.ndarray = stdtr(df, -(np.asarray(mean, dtype="float64") + margin) / np.asarray(se))  # H0: diff ≤ −margin
        upper: np.ndarray = stdtr(df, (np.asarray(mean, dtype="float64") - margin) / np.asarray(se))  # H0: diff ≥ +margin
    p: np.ndarray = np.maximum(lower, upper)
    return p


def holm(pvalues: ArrayLike, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down across the last axis: (reject, adjusted p-values); NaN p-values (an arm
    without two folds, or one decided at an earlier look) take no part and are never rejected.
    The same numbers as statsmodels' multipletests(method="holm") (tests/test_verdicts.py checks
    it), computed on every row at once: a thousand simulated studies in one call."""
    p = np.asarray(pvalues, dtype="float64")
    order = np.argsort(np.where(np.isnan(p), np.inf, p), axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    m = np.sum(~np.isnan(p), axis=-1, keepdims=True)
    factor = m - np.arange(p.shape[-1])  # m, m − 1, ... for the smallest p-value first
    stepped = np.fmax.accumulate(np.minimum(1.0, ranked * factor), axis=-1) if p.size else ranked
    stepped = np.where(np.isnan(ranked), np.nan, stepped)
    adjusted = np.empty_like(stepped)
    np.put_along_axis(adjusted, order, stepped, axis=-1)
    with np.errstate(invalid="ignore"):
        return adjusted <= alpha, adjusted


def holm_levels(pvalues: ArrayLike, alpha: float) -> np.ndarray:
    """The level each p-value (last axis) was tested at by Holm's step-down (holm): alpha/m for the
    smallest, alpha/(m − 1) for the next, ... up to the first step that does not reject; that step's
    level for it and every larger p-value (none of them is rejected at it, since each p-value is at
    least the one that stopped the procedure). So a p-value is rejected exactly where it is ≤ its
    level, and the 1 − level interval of a test that rejects where its interval excludes a region is
    the interval Holm's decision was made on. NaN where the p-value is NaN."""
    p = np.asarray(pvalues, dtype="float64")
    order = np.argsort(np.where(np.isnan(p), np.inf, p), axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    m = np.sum(~np.isnan(p), axis=-1, keepdims=True)
    own = alpha / np.maximum(m - np.arange(p.shape[-1]), 1)  # the level of each step
    with np.errstate(invalid="ignore"):
        stopped = np.logical_or.accumulate(~(ranked <= own), axis=-1)  # this step or an earlier one did not reject
    first = np.argmax(stopped, axis=-1)[..., None]  # the step that stopped it (where one did)
    stop_level = np.take_along_axis(own, first, axis=-1) if own.ndim == p.ndim else own[first]
    stepped = np.where(stopped, stop_level, own)
    stepped = np.where(np.isnan(ranked), np.nan, stepped)
    levels = np.empty_like(stepped)
    np.put_along_axis(levels, order, stepped, axis=-1)
    return levels


def beyond_p(mean: ArrayLike, se: ArrayLike, df: ArrayLike, margin: float | np.ndarray) -> np.ndarray:
    """Two-sided p-value of the minimum-effect test of |difference| ≤ margin: twice the smaller of
    the one-sided p-values of d ≥ −margin (rejected: better) and d ≤ +margin (rejected: worse),
    so it rejects at alpha exactly where the 1 − alpha interval lies beyond one ROPE boundary."""
    from scipy.special import stdtr

    with np.errstate(invalid="ignore", divide="ignore"):
        below: np.ndarray = stdtr(df, (np.asarray(mean, dtype="float64") + margin) / np.asarray(se))  # H0: d ≥ −margin
        above: np.ndarray = stdtr(df, -(np.asarray(mean, dtype="float64") - margin) / np.asarray(se))  # H0: d ≤ +margin
    p: np.ndarray = np.minimum(1.0, 2.0 * np.minimum(below, above))
    return p


def verdict_codes(mean: ArrayLike, equivalent: np.ndarray, beyond: np.ndarray) -> np.ndarray:
    """Index into VERDICTS: better (mean < 0: lower loss) or worse where the test beyond the ROPE
    rejected; equivalent where the TOST rejected; else undecided (the two cannot both reject)."""
    mean = np.asarray(mean)
    code = np.full(mean.shape, VERDICTS.index("undecided"))
    code = np.where(equivalent, VERDICTS.index("equivalent"), code)
    code = np.where(beyond & (mean < 0), VERDICTS.index("better"), code)
    return np.where(beyond & (mean > 0), VERDICTS.index("worse"), code)


def _margin(margin: float | np.ndarray) -> float | np.ndarray:
    return np.asarray(margin)[..., None] if np.ndim(margin) else margin


@dataclass(frozen=True, eq=False)
class FoldTests:
    """The tests of every arm against the reference (fold_verdicts), as scipy.stats gives a test's result:
    named arrays, each of shape (..., arms), the leading axes those of the differences given (none for
    one study: one entry per arm; (studies,) where planted studies are read at once, one entry per
    (study, arm); (ρ grid, ...) in holds_up_to_rho). The p-values are Holm-adjusted across the arms
    (a sequential design's, sequential.SequentialTests: unadjusted at each arm's last look)."""

    mean: np.ndarray  # the mean difference from the reference (below 0: lower loss); NaN without a pair
    se: np.ndarray  # its standard error, corrected for the folds' overlap (NaN with fewer than two pairs)
    df: np.ndarray  # its degrees of freedom (float)
    p_difference: np.ndarray  # the p-value of "no difference": it decides only `different`
    p_equivalence: np.ndarray  # TOST's p-value of |difference| < margin: it decides equivalent
    p_beyond: np.ndarray  # the minimum-effect test's p-value of |difference| ≤ margin: it decides better or worse
    verdict: np.ndarray  # codes into VERDICTS (int)
    different: np.ndarray  # bool: the no-difference test rejected where the verdict is undecided


def fold_verdicts(diffs: ArrayLike, k: int, margin: float | np.ndarray, alpha: float = 0.05, rho: ArrayLike | None = None,
                  cells: ArrayLike | None = None) -> FoldTests:
    """The verdict of each arm from its fold differences, shape (..., arms, folds): the corrected
    t (at fold correlation rho, 1/K by default), the test beyond ±margin, the TOST within it and the
    test of no difference, each family Holm-adjusted across the arms (FoldTests: arrays of shape
    (..., arms))."""
    mean, se, df = corrected_stats(diffs, k, rho, cells)
    reject_eq, adj_eq = holm(equivalence_p(mean, se, df, _margin(margin)), alpha)
    reject_beyond, adj_beyond = holm(beyond_p(mean, se, df, _margin(margin)), alpha)
    reject_diff, adj_diff = holm(difference_p(mean, se, df), alpha)
    verdict = verdict_codes(mean, reject_eq, reject_beyond)
    return FoldTests(mean=mean, se=se, df=df, p_difference=adj_diff, p_equivalence=adj_eq, p_beyond=adj_beyond,
                     verdict=verdict, different=reject_diff & (verdict == VERDICTS.index("undecided")))


RHO_GRID = np.round(np.arange(0.01, 0.995, 0.01), 2)  # the fold correlations holds_up_to_rho tries


def holds_up_to_rho(diffs: ArrayLike, k: int, margin: float | np.ndarray, alpha: float = 0.05,
                    cells: ArrayLike | None = None) -> np.ndarray:
    """Per arm (shape (..., arms)): the largest fold correlation ρ on a grid of 0.01 (from 1/K, the
    correction's own, up to 0.99) at which fold_verdicts still gives the verdict it gives at 1/K,
    every smaller ρ on the way giving it too; NaN for an undecided arm. 0.99 means at every ρ tried."""
    x = np.asarray(diffs, dtype="float64")
    base = fold_verdicts(x, k, margin, alpha, cells=cells).verdict
    grid = RHO_GRID[RHO_GRID > 1.0 / k]
    if not len(grid):
        return np.where(base == VERDICTS.index("undecided"), np.nan, 1.0 / k)
    rho = grid.reshape((-1,) + (1,) * (x.ndim - 1))
    at = fold_verdicts(np.broadcast_to(x, (len(grid),) + x.shape), k, margin, alpha, rho=rho, cells=cells).verdict
    stands = np.logical_and.accumulate(at == base, axis=0)
    last = stands.sum(axis=0)  # grid points it stands at, in a row from the first
    held = np.where(last > 0, grid[np.maximum(last - 1, 0)], 1.0 / k)
    return np.where(base == VERDICTS.index("undecided"), np.nan, held)
