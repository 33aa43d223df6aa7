"""The expected best of m runs: the fair way to compare groups that were searched unequally.

The lowest loss found in a group of n runs is a best-of-n: it falls as n grows (the expected minimum
of n normal draws is 0 σ below the mean at n = 1, 1.54 σ at n = 10, 1.87 σ at n = 20), and a sampler
such as TPE puts more runs where the losses are good, so the bias feeds itself. Dodge, Gururangan,
Card, Schwartz and Smith, "Show Your Work: Improved Reporting of Experimental Results" (EMNLP 2019)
compare the expected best of the same m runs for each group instead, from each group's empirical
distribution of results: for losses sorted x₍₁₎ ≤ … ≤ x₍ₙ₎ (lowest first, as a loss is minimised),

    E[min of m] = Σᵢ x₍ᵢ₎ · [((n − i + 1)/n)^m − ((n − i)/n)^m],

the chance that the lowest of m draws (with replacement) is x₍ᵢ₎ times x₍ᵢ₎. Its interval here is a
percentile bootstrap over the group's runs.
"""

from __future__ import annotations

import math

import numpy as np

MIN_INTERVAL_RUNS = 3  # a group with fewer runs gets no interval
BOOTSTRAP = 500


def expected_best_of_m(losses, m: int) -> float:
    """E[min of m runs drawn with replacement from `losses`] (Dodge et al. 2019); NaN without losses."""
    x = np.sort(np.asarray(losses, dtype="float64"))
    n = len(x)
    if n == 0 or m < 1:
        return math.nan
    i = np.arange(1, n + 1)
    weights = ((n - i + 1) / n) ** m - ((n - i) / n) ** m
    return float(weights @ x)


def best_of_m_interval(losses, m: int, confidence: float = 0.95, bootstrap: int = BOOTSTRAP,
                       seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval of expected_best_of_m over the runs; NaNs under
    MIN_INTERVAL_RUNS runs."""
    x = np.asarray(losses, dtype="float64")
    if len(x) < MIN_INTERVAL_RUNS:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = [expected_best_of_m(x[rng.integers(0, len(x), len(x))], m) for _ in range(bootstrap)]
    tail = (1 - confidence) / 2
    return float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))


__all__ = ["MIN_INTERVAL_RUNS", "best_of_m_interval", "expected_best_of_m"]
