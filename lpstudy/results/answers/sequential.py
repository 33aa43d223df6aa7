"""A comparison that stops when it is decided (`lpstudy replicate --until-decided --max-folds K`).

The folds are those of ONE K-fold cross-validation, K = --max-folds, so a fold's training text never
changes; they run in rounds (3, 5, 8, 10 folds by default, capped at K, K last). After each round
(a look) every arm still undecided is tested on the folds so far with fold_tests' corrected t and
its decision rule (beyond the ROPE: better or worse; within it by TOST: equivalent). A decided arm
keeps its verdict and gets no more folds.

The boundaries (Jennison & Turnbull, "Group Sequential Methods with Applications to Clinical
Trials", 2000, ch. 7): alpha is spent over the looks by Lan & DeMets' O'Brien–Fleming-type function
(Lan & DeMets, "Discrete sequential boundaries for clinical trials", Biometrika 70, 1983),
α(t) = 2 − 2Φ(z₁₋α/₂ / √t), and each look's critical value c_j solves
P(|Z₁| < c₁, …, |Z_j| < c_j) = 1 − α(t_j) under the joint normal distribution of the looks'
statistics, where corr(Z_i, Z_j) = √(t_i / t_j) (integrated numerically; the tests check it against
scipy.stats.multivariate_normal). The information
fraction is the corrected variance's: with equicorrelated folds the mean of the first n differences
has variance σ²(1/n + 1/(K − 1)) (up to a constant), so t_n = (1/K + 1/(K − 1)) / (1/n + 1/(K − 1)),
not n / K (the first 3 of 10 folds carry 47 % of the information, not 30 %); the same correlation
gives the canonical joint distribution above. A t statistic is compared at the nominal level of its
look's z boundary (J&T's significance-level approach).

Seeds inside the folds (`replicate --until-decided --seeds S`): each stage runs its folds with all S
seeds, and a look's statistic is the seeded corrected t (lpstudy.intervals: the overlap correction on
the partition's share only). Its variance over n folds is (σ²_fold + σ²_seed/S)/n + σ²_fold/(K − 1):
the information fraction lies between n/K (no partition share) and the formula above (no seed share),
and which it is depends on the components, which the first stage only estimates. The fixed rule here:
t_n = n/K, its lower bound. An assumed fraction below the true one assumes the looks correlate less
than they do, so the boundaries are conservative (the union of more correlated crossings is smaller):
the error rate stays at or below alpha whatever the components, at a small cost in power
(benchmarks/bench_sequential_seeds.py measures both).

Several arms, several looks: the graphical approach (Maurer & Bretz, "Multiple testing in group
sequential trials using graphical approaches", Statistics in Biopharmaceutical Research 5, 2013)
with Holm's graph, each family (beyond the ROPE; within it) on its own: every hypothesis not yet
rejected holds an equal share of alpha with its own spending boundary; a rejection passes its share
on to the family's other hypotheses, whose boundaries are recomputed at the larger level and tested
again at the same look. An arm decided in the other family keeps its share (closed testing does not
let it go), so the family-wise error stays at alpha over arms and looks.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from lpstudy.results.answers.fold_tests import (VERDICTS, FoldTests, beyond_p, corrected_stats, difference_p,
                                                equivalence_p, share_ratio, verdict_codes)

DEFAULT_ROUNDS = (3, 5, 8, 10)
UNDECIDED = VERDICTS.index("undecided")


def rounds_of(max_folds: int, rounds: Sequence[int] | None = None) -> list[int]:
    """The folds run after each round: the given sizes (default 3, 5, 8, 10, then doubling: 20, 40, ...)
    below K, then K. Past 10 folds the stages double, so that a large K (the 48 folds seeds inside a
    fold call for at the smoke preset) still has looks at a fifth, two fifths and four fifths of it,
    rather than one jump from 10 to K where the boundaries spend almost nothing before K."""
    default = list(DEFAULT_ROUNDS)
    while 2 * default[-1] <= 0.85 * max_folds:  # a stage well short of K, not a look just before it
        default.append(default[-1] * 2)
    sizes = sorted({int(r) for r in (rounds or default) if 2 <= int(r) < max_folds})
    return [*sizes, int(max_folds)]


def spent(fraction: ArrayLike, alpha: float) -> np.ndarray:
    """Lan–DeMets O'Brien–Fleming-type alpha spent by information fraction t (0 < t ≤ 1)."""
    from scipy.stats import norm

    t = np.asarray(fraction, dtype="float64")
    total: np.ndarray = 2.0 - 2.0 * norm.cdf(norm.ppf(1 - alpha / 2) / np.sqrt(t))
    return total


def information(rounds: list[int], max_folds: int, seeded: bool = False) -> np.ndarray:
    """Each look's information fraction from the corrected variance of its mean difference; seeded
    (seeds inside the folds): n/K, its lower bound (the module's docstring)."""
    n = np.asarray(rounds, dtype="float64")
    if seeded:
        return n / max_folds
    return (1.0 / max_folds + share_ratio(max_folds)) / (1.0 / n + share_ratio(max_folds))


def look_levels(rounds: list[int], max_folds: int, alpha: float, seeded: bool = False) -> list[float]:
    """Each look's increment of the alpha spent (they sum to alpha)."""
    total = spent(information(rounds, max_folds, seeded), alpha)
    return list(np.diff(np.concatenate([[0.0], total])))


GRID_POINTS = 801  # the grid the looks' joint density is integrated on (Armitage, McPherson & Rowe 1969)


@functools.lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """Critical values from the joint distribution of the looks: the score S_j = Z_j √t_j has
    independent normal increments, so the density of S_j on the paths that have not crossed yet is
    carried look to look by numerical integration (Jennison & Turnbull ch. 19; the recursion of
    Armitage, McPherson & Rowe 1969), and c_j solves P(cross first at j) = α(t_j) − α(t_{j−1})."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    t = np.asarray(fractions)
    total = spent(t, alpha)
    bounds = [float(norm.ppf(1 - total[0] / 2))]
    half = bounds[0] * math.sqrt(t[0])
    grid = np.linspace(-half, half, GRID_POINTS)
    weights = np.full(GRID_POINTS, grid[1] - grid[0])
    weights[[0, -1]] /= 2  # the trapezoid rule
    density = norm.pdf(grid, scale=math.sqrt(t[0]))
    for j in range(1, len(t)):
        step = math.sqrt(t[j] - t[j - 1])
        mass = density * weights
        increment = total[j] - total[j - 1]

        def crossing(c: float, step: float = step, mass: np.ndarray = mass, edge: float = math.sqrt(t[j])) -> float:
            limit = c * edge
            return float(np.sum(mass * (norm.sf((limit - grid) / step) + norm.cdf((-limit - grid) / step))))

        bounds.append(float(brentq(lambda c: crossing(c) - increment, 0.1, 15.0, xtol=1e-9)))
        half = bounds[-1] * math.sqrt(t[j])
        new = np.linspace(-half, half, GRID_POINTS)
        density = (norm.pdf((new[:, None] - grid[None, :]) / step) / step) @ mass
        grid = new
        weights = np.full(GRID_POINTS, grid[1] - grid[0])
        weights[[0, -1]] /= 2
    return tuple(bounds)


def boundaries(rounds: list[int], max_folds: int, alpha: float, seeded: bool = False) -> np.ndarray:
    """Each look's two-sided critical value |Z| ≥ c_j for a total two-sided error of alpha, from the
    looks' joint normal distribution (see the module's docstring)."""
    fractions = tuple(float(f) for f in np.round(information(rounds, max_folds, seeded), 12))
    return np.asarray(_boundaries(fractions, float(alpha)))


def nominal_levels(rounds: list[int], max_folds: int, alpha: float, seeded: bool = False) -> np.ndarray:
    """Each look's nominal two-sided p-value threshold, 2 − 2Φ(c_j)."""
    from scipy.stats import norm

    levels: np.ndarray = 2.0 - 2.0 * norm.cdf(boundaries(rounds, max_folds, alpha, seeded))
    return levels


def _graph_levels(rounds: list[int], max_folds: int, alpha: float, m: int, two_sided: bool, seeded: bool = False) -> np.ndarray:
    """(looks, m + 1): the nominal threshold of a hypothesis holding alpha / h (h = 1..m; column 0
    unused) at each look; a one-sided family (TOST's tests) is a two-sided one at twice its alpha."""
    out = np.zeros((len(rounds), m + 1))
    for h in range(1, m + 1):
        share = alpha / h
        levels = nominal_levels(rounds, max_folds, share if two_sided else 2 * share, seeded)
        out[:, h] = levels if two_sided else levels / 2
    return out


def _graphical(p: np.ndarray, held: np.ndarray, testable: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Holm's graph at one look: hypotheses `held` (not rejected yet) share alpha equally; those
    `testable` now are rejected where p ≤ the threshold of their share; a rejection passes its share
    on and the rest are tested again. Returns (rejected now, held after)."""
    held = held.copy()
    rejected = np.zeros_like(held)
    for _ in range(held.shape[-1]):
        h = held.sum(axis=-1, keepdims=True)
        level = np.take_along_axis(np.broadcast_to(table, held.shape[:-1] + table.shape), np.maximum(h, 1), axis=-1) \
            if held.ndim > 1 else table[np.maximum(h, 1)]
        now = held & testable & ~rejected & (np.nan_to_num(p, nan=2.0) <= level)
        if not now.any():
            break
        rejected |= now
        held &= ~now
    return rejected, held


@dataclass(frozen=True, eq=False)
class LookTests:
    """One look of a sequential design as it was taken (SequentialTests.history): arrays of shape
    (..., arms), the leading axes those of the differences given, as FoldTests'."""

    level: float  # the alpha this look spends (its increment of the spending function)
    active: np.ndarray  # bool: the arms still undecided before it, the ones it tested
    verdict: np.ndarray  # codes into VERDICTS: a tested arm's verdict at this look, the others' earlier one
    mean: np.ndarray  # the mean difference over this look's folds (every arm's, tested or not)
    se: np.ndarray  # its corrected standard error
    df: np.ndarray  # its degrees of freedom


@dataclass(frozen=True, eq=False)
class SequentialTests(FoldTests):
    """The looks replayed (sequential_verdicts): FoldTests' arrays, shape (..., arms), read where each arm
    stopped (verdict: the one a look gave it, else undecided; mean, se, df over its last look's folds;
    the p-values unadjusted at the last look it took part in, each compared with that look's boundary,
    not with alpha; different: its no-difference test crossed the boundary there and it is undecided),
    and the looks themselves."""

    decided_at: np.ndarray  # the look (0-based) that decided each arm; -1: none
    folds_used: np.ndarray  # the folds each arm used: its deciding look's, else the last look's
    level: float  # the alpha the last look taken spends (NaN before any look)
    history: list[LookTests]  # each look taken, in order


def sequential_verdicts(diffs: ArrayLike, max_folds: int, margin: float | np.ndarray, alpha: float, rounds: list[int],
                        looks_done: int | None = None, failed: ArrayLike | None = None,
                        reference_failed: ArrayLike | None = None, folds: ArrayLike | None = None) -> SequentialTests:
    """Replay the looks over the differences, shape (..., arms, K) (NaN: a fold not run), the first
    `looks_done` looks (default all): SequentialTests, per arm the verdict, the look that decided it
    and the folds it used, its last look's numbers, and each look taken (history). failed (shape of
    diffs) and reference_failed (K,): the runs that failed; at a look, an arm with a failed run among
    the look's folds can be neither better nor equivalent, nor worse or equivalent where the reference
    failed (endpoint_verdicts' rule): it stays undecided. folds: the fold of each position of the last
    axis, where a fold holds several seeds (--seeds S; a look at n folds takes every position of folds
    0 .. n − 1, its cells the folds, and the information fraction n/K: the module's docstring); None:
    position i is fold i, one run each."""
    x = np.asarray(diffs, dtype="float64")
    labels = np.arange(x.shape[-1]) if folds is None else np.asarray(folds)
    seeded = folds is not None and len(np.unique(labels)) < len(labels)
    arm_failed = np.zeros(x.shape, bool) if failed is None else np.asarray(failed, bool)
    ref_failed = np.zeros(x.shape[-1], bool) if reference_failed is None else np.asarray(reference_failed, bool)
    shape = x.shape[:-1]
    m = shape[-1] if len(shape) else 1
    verdict = np.full(shape, UNDECIDED)
    decided_at = np.full(shape, -1)
    folds_used = np.zeros(shape, dtype=int)
    levels = look_levels(rounds, max_folds, alpha, seeded)
    beyond_table = _graph_levels(rounds, max_folds, alpha, m, two_sided=True, seeded=seeded)
    within_table = _graph_levels(rounds, max_folds, alpha, m, two_sided=False, seeded=seeded)
    held_beyond, held_within = np.ones(shape, bool), np.ones(shape, bool)
    n_looks = len(rounds) if looks_done is None else looks_done
    # the last look's numbers (NaN where no look is taken)
    mean: np.ndarray = np.full(shape, np.nan)
    se: np.ndarray = np.full(shape, np.nan)
    df: np.ndarray = np.full(shape, np.nan)
    last_level = math.nan
    history: list[LookTests] = []
    kept = {key: np.full(shape, np.nan) for key in ("p_difference", "p_equivalence", "p_beyond")}
    different = np.zeros(shape, bool)
    for look, (n, level) in enumerate(zip(rounds[:n_looks], levels)):
        active = verdict == UNDECIDED
        seen = labels < n
        mean, se, df = corrected_stats(x[..., seen], max_folds, cells=labels[seen] if seeded else None)
        p = {"p_difference": difference_p(mean, se, df), "p_equivalence": equivalence_p(mean, se, df, margin),
             "p_beyond": beyond_p(mean, se, df, margin)}
        reject_beyond, held_beyond = _graphical(p["p_beyond"], held_beyond, active, beyond_table[look])
        reject_within, held_within = _graphical(p["p_equivalence"], held_within, active, within_table[look])
        now = verdict_codes(mean, reject_within, reject_beyond)
        mine, theirs = arm_failed[..., seen].any(axis=-1), ref_failed[seen].any()
        barred = (mine & np.isin(now, [VERDICTS.index("better"), VERDICTS.index("equivalent")])) | \
            (theirs & np.isin(now, [VERDICTS.index("worse"), VERDICTS.index("equivalent")]))
        now = np.where(barred, UNDECIDED, now)
        newly = active & (now != UNDECIDED)
        verdict = np.where(newly, now, verdict)
        decided_at = np.where(newly, look, decided_at)
        folds_used = np.where(active, n, folds_used)
        for key in kept:
            kept[key] = np.where(active, p[key], kept[key])
        different = np.where(active, p["p_difference"] <= beyond_table[look][m], different)
        last_level = level
        history.append(LookTests(level=level, active=active, verdict=np.where(active, now, verdict),
                                 mean=mean, se=se, df=df))
    return SequentialTests(mean=mean, se=se, df=df, p_difference=kept["p_difference"],
                           p_equivalence=kept["p_equivalence"], p_beyond=kept["p_beyond"], verdict=verdict,
                           different=different & (verdict == UNDECIDED), decided_at=decided_at,
                           folds_used=folds_used, level=last_level, history=history)


def planted_differences(k: int, effects: ArrayLike, n_studies: int, sd: float = 1.0, seed: int = 0,
                        n_folds: int | None = None, rho: float | None = None) -> np.ndarray:
    """(n_studies, arms, folds) differences: effect + a study-and-arm shock shared by every fold
    (variance ρ sd², ρ = 1/K unless given) + each fold's own noise (variance (1 − ρ) sd²). The first
    n_folds of the K folds (default K)."""
    rng = np.random.default_rng(seed)
    planted = np.asarray(effects, dtype="float64")
    rho = 1.0 / k if rho is None else float(rho)
    shared = rng.normal(0.0, sd * math.sqrt(rho), (n_studies, len(planted), 1))
    own = rng.normal(0.0, sd * math.sqrt(1 - rho), (n_studies, len(planted), n_folds or k))
    return planted[None, :, None] + shared + own
