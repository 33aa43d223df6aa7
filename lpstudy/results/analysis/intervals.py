"""Confidence intervals: Student's t for the mean of independent values, Wilson's for rates (both
written once, in lpstudy/intervals.py)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.intervals import interval, wilson_interval  # noqa: F401  (the pages' rates read it here)


def t_interval(values: Sequence[float] | pd.Series, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval for the mean; low/high NaN with fewer than 2 values."""
    x = np.asarray(pd.Series(values, dtype="float64").dropna())
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    low, high = interval(mean, x.std(ddof=1) / math.sqrt(len(x)), len(x) - 1, confidence)
    return mean, float(low), float(high)
