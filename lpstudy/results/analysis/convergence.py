"""Convergence: curves joined with p, steps to a threshold, area under the curve, median bands."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.results.analysis.cohort import curve_cohort
from lpstudy.results.analysis.selection import finished


def steps_to_threshold(curves: pd.DataFrame, threshold: float, column: str = "val_loss") -> pd.Series:
    """Per trial number, the first evaluated step at which `column` ≤ threshold; NaN if never."""
    if curves.empty:
        return pd.Series(dtype="float64", name="steps_to_threshold")
    ordered = curves.sort_values(["trial_number", "step"])
    hit = ordered[ordered[column] <= threshold]
    first = hit.groupby("trial_number")["step"].min().astype("float64")
    out = first.reindex(ordered["trial_number"].unique())
    out.index.name = "trial_number"
    return out.rename("steps_to_threshold")


def area_under_curve(curves: pd.DataFrame, column: str = "val_loss") -> pd.Series:
    """Per trial number, the area under `column` against step by the trapezoid rule, divided by
    the steps it spans: the mean loss over training (lower = faster convergence). NaN with fewer
    than 2 evaluations."""
    rows = {}
    for number, group in curves.dropna(subset=[column]).sort_values("step").groupby("trial_number"):
        steps, values = group["step"].to_numpy(dtype="float64"), group[column].to_numpy(dtype="float64")
        span = steps[-1] - steps[0] if len(steps) > 1 else 0.0
        rows[number] = float(np.trapezoid(values, steps) / span) if span > 0 else math.nan
    out = pd.Series(rows, dtype="float64", name="auc")
    out.index.name = "trial_number"
    return out


def convergence_by_trial(curves: pd.DataFrame, trials: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per COMPLETE trial: p, lr, diverged, steps to reach threshold (NaN if never) and the
    normalised area under its validation curve."""
    done = finished(trials)
    out = done[["number", "p", "lr", "gain_init", "diverged", "loss"]].set_index("number")
    out["steps_to_threshold"] = steps_to_threshold(curves, threshold).reindex(out.index)
    out["auc"] = area_under_curve(curves).reindex(out.index)
    out["reached"] = out["steps_to_threshold"].notna()
    out.index.name = "trial_number"
    return out.reset_index()


def curve_bands(curves: pd.DataFrame, trials: pd.DataFrame, column: str = "val_loss",
                bins: int | Sequence[float] | None = None, include_diverged: bool = False) -> pd.DataFrame:
    """Per p group and step: the median of `column` with the band between the 25th and 75th
    percentiles, over one cohort at every step (lpstudy.results.analysis.cohort: the trials that
    reached the last step drawn, never whoever still runs at a step), and n, the cohort's size in
    the group. Diverged runs are left out unless include_diverged. The trials outside the cohort,
    to draw apart: cohort.curve_cohort."""
    return curve_cohort(curves, trials, column, bins, include_diverged).bands
