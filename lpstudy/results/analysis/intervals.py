"""Confidence intervals: Student's t for means, Wilson's for rates."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd


def t_interval(values: Sequence[float] | pd.Series, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval for the mean; low/high NaN with fewer than 2 values."""
    from scipy.special import stdtrit  # scipy.special imports in a third of scipy.stats' time

    x = np.asarray(pd.Series(values, dtype="float64").dropna())
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = float(stdtrit(len(x) - 1, 0.5 + confidence / 2) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion (SciPy's binomtest); (NaN, NaN) when n = 0."""
    if n <= 0:
        return math.nan, math.nan
    from scipy.stats import binomtest  # imported when a rate is first drawn: scipy.stats is slow to import

    interval = binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)
