"""A comparison that stops when it is decided (`lpstudy replicate --until-decided --max-folds K`).

The folds are those of ONE K-fold cross-validation, K = --max-folds, so a fold's training text never
changes; they run in rounds (3, 5, 8, 10 folds by default, capped at K, K last). After each round
(a look) every arm still undecided is tested on the folds so far with fold_tests' corrected t: the
TOST against the ROPE and the difference test, each family Holm-adjusted across the arms tested at
that look. A decided arm keeps its verdict and gets no more folds.

Repeated looks would inflate the error rate; each look is tested at its increment of alpha spent by
Lan & DeMets' O'Brien–Fleming-type function (Lan & DeMets, "Discrete sequential boundaries for
clinical trials", Biometrika 70, 1983): α(t) = 2 − 2Φ(z₁₋α/₂ / √t) at information fraction
t = n / K. The increments sum to alpha, so by the union bound the chance of any wrong verdict over
all looks and arms stays at most alpha, for each family. (The union bound ignores how the looks'
statistics correlate, so it is conservative: it spends little early, which suits a rule that should
stop early only when the evidence is overwhelming.)
"""

from __future__ import annotations

import math

import numpy as np

from lpstudy.results.answers.fold_tests import VERDICTS, corrected_stats, difference_p, equivalence_p, holm, verdict_codes

DEFAULT_ROUNDS = (3, 5, 8, 10)
UNDECIDED = VERDICTS.index("undecided")


def rounds_of(max_folds: int, rounds=None) -> list[int]:
    """The folds run after each round: the given sizes (default 3, 5, 8, 10) below K, then K."""
    sizes = sorted({int(r) for r in (rounds or DEFAULT_ROUNDS) if 2 <= int(r) < max_folds})
    return [*sizes, int(max_folds)]


def spent(fraction, alpha: float):
    """Lan–DeMets O'Brien–Fleming-type alpha spent by information fraction t (0 < t ≤ 1)."""
    from scipy.stats import norm

    t = np.asarray(fraction, dtype="float64")
    return 2.0 - 2.0 * norm.cdf(norm.ppf(1 - alpha / 2) / np.sqrt(t))


def look_levels(rounds: list[int], max_folds: int, alpha: float) -> list[float]:
    """Each look's level: its increment of the alpha spent (they sum to alpha)."""
    total = spent(np.asarray(rounds) / max_folds, alpha)
    return list(np.diff(np.concatenate([[0.0], total])))


def sequential_verdicts(diffs, max_folds: int, margin, alpha: float, rounds: list[int],
                        looks_done: int | None = None) -> dict[str, np.ndarray]:
    """Replay the looks over the differences, shape (..., arms, K) (NaN: a fold not run), the first
    `looks_done` looks (default all): per arm the verdict (codes into VERDICTS), the look that
    decided it (-1: none) and the folds it used (its deciding look's, else the last look's), the
    mean, se and df over its folds, and its Holm-adjusted p-values at the last look it took part in
    (each against that look's level); under "history", each look taken: its level, which arms it
    tested ("active"), their verdict at that look and the mean, se and df over that look's folds."""
    x = np.asarray(diffs, dtype="float64")
    shape = x.shape[:-1]
    verdict = np.full(shape, UNDECIDED)
    decided_at = np.full(shape, -1)
    folds_used = np.zeros(shape, dtype=int)
    levels = look_levels(rounds, max_folds, alpha)
    n_looks = len(rounds) if looks_done is None else looks_done
    last, history = {}, []
    kept_diff, kept_eq = np.full(shape, np.nan), np.full(shape, np.nan)  # each arm's p-values at its last look
    for look, (n, level) in enumerate(zip(rounds[:n_looks], levels)):
        active = verdict == UNDECIDED
        mean, se, df = corrected_stats(x[..., :n], max_folds)
        p_diff = np.where(active, difference_p(mean, se, df), np.nan)
        p_eq = np.where(active, equivalence_p(mean, se, df, margin), np.nan)
        reject_eq, adj_eq = holm(p_eq, level)
        reject_diff, adj_diff = holm(p_diff, level)
        now = verdict_codes(mean, reject_eq, reject_diff)
        newly = active & (now != UNDECIDED)
        verdict = np.where(newly, now, verdict)
        decided_at = np.where(newly, look, decided_at)
        folds_used = np.where(active, n, folds_used)
        kept_diff, kept_eq = np.where(active, adj_diff, kept_diff), np.where(active, adj_eq, kept_eq)
        last = {"mean": mean, "se": se, "df": df, "p_difference": kept_diff, "p_equivalence": kept_eq,
                "level": level}
        history.append({"level": level, "active": active, "verdict": np.where(active, now, verdict),
                        "mean": mean, "se": se, "df": df})
    return {"verdict": verdict, "decided_at": decided_at, "folds_used": folds_used, **last, "history": history}


def simulate(k: int, effects, n_studies: int, sd: float = 1.0, margin: float = 2.0, alpha: float = 0.05,
             rounds=None, seed: int = 0) -> dict[str, np.ndarray]:
    """Planted fold differences of n_studies studies: per arm (its true effect in `effects`) K
    folds of one K-fold CV, correlated as the shared training text makes them (ρ = 1/K, Nadeau &
    Bengio), replayed through sequential_verdicts. For the tests and benchmarks/bench_verdicts.py."""
    diffs = planted_differences(k, effects, n_studies, sd, seed)
    return sequential_verdicts(diffs, k, margin, alpha, rounds_of(k, rounds))


def planted_differences(k: int, effects, n_studies: int, sd: float = 1.0, seed: int = 0,
                        n_folds: int | None = None) -> np.ndarray:
    """(n_studies, arms, folds) differences: effect + a study-and-arm shock shared by every fold
    (variance ρ sd², ρ = 1/K) + each fold's own noise (variance (1 − ρ) sd²). The first n_folds of
    the K folds (default K)."""
    rng = np.random.default_rng(seed)
    effects = np.asarray(effects, dtype="float64")
    rho = 1.0 / k
    shared = rng.normal(0.0, sd * math.sqrt(rho), (n_studies, len(effects), 1))
    own = rng.normal(0.0, sd * math.sqrt(1 - rho), (n_studies, len(effects), n_folds or k))
    return effects[None, :, None] + shared + own
