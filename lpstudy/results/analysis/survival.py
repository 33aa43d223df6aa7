"""How soon each group of runs reaches the loss threshold, with the runs that never get there
counted: Kaplan–Meier curves and the restricted mean steps, through `lifelines`.

Each run is a time to an event (reaching the threshold) or censored where it stops (its endpoints:
lpstudy.results.analysis.convergence.run_endpoints). Kaplan & Meier's product-limit estimator
("Nonparametric estimation from incomplete observations", JASA 53, 1958) gives the share of a group's
runs that have reached it by each step, with Greenwood's variance (lifelines' exponential interval).
The restricted mean time to reach it over the horizon τ, RMST = E[min(T, τ)], is the area under the
Kaplan–Meier curve up to τ (Royston & Parmar, "Restricted mean survival time: an alternative to the
hazard ratio for the design and analysis of randomized trials with a time-to-event outcome", BMC
Medical Research Methodology 13, 2013): defined whatever the share of censored runs, in steps, and
the same quantity the paired verdicts compare fold by fold.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

REACH_COLUMNS = ("group", "step", "reached", "low", "high")
RMST_COLUMNS = ("group", "runs", "reached", "censored", "rmst", "low", "high")


def _fitted(times, events, alpha: float):
    from lifelines import KaplanMeierFitter

    return KaplanMeierFitter(alpha=alpha).fit(np.asarray(times, dtype="float64"), np.asarray(events, dtype=bool))


def reach_curves(endpoints: pd.DataFrame, groups: pd.Series, alpha: float = 0.05) -> pd.DataFrame:
    """Per group (the label of each run in `groups`, indexed like `endpoints`) and step: the share of
    its runs that reached the threshold by that step (1 − Kaplan–Meier) with its 1 − alpha interval."""
    frames = []
    joined = endpoints[["time", "reached"]].join(groups.rename("group"), how="inner").dropna(subset=["time"])
    for group, runs in joined.groupby("group", sort=False):
        fit = _fitted(runs["time"], runs["reached"], alpha)
        bounds = fit.confidence_interval_survival_function_
        frames.append(pd.DataFrame({"group": group, "step": fit.survival_function_.index.to_numpy(dtype="float64"),
                                    "reached": 1 - fit.survival_function_.iloc[:, 0].to_numpy(),
                                    "low": 1 - bounds.iloc[:, 1].to_numpy(), "high": 1 - bounds.iloc[:, 0].to_numpy()}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(REACH_COLUMNS))


def restricted_mean(fit, horizon: float) -> tuple[float, float]:
    """(the restricted mean time up to the horizon, its variance) of a fitted Kaplan–Meier curve:
    the area under the step function up to τ, and Greenwood's variance of that area,
    Σ A(tᵢ)² dᵢ / (nᵢ (nᵢ − dᵢ)) over the event times tᵢ ≤ τ, A(tᵢ) the area from tᵢ to τ (Klein &
    Moeschberger, "Survival Analysis", 2nd ed. 2003, §4.5). lifelines' own restricted_mean_survival_time
    gives the same mean (the tests check it) but, asked for a variance, the spread of min(T, τ) among
    the runs rather than of the estimate, by numerical integration that takes seconds per curve."""
    curve = fit.survival_function_.iloc[:, 0]
    times = curve.index.to_numpy(dtype="float64")
    inside = times < horizon
    times, survival = times[inside], curve.to_numpy(dtype="float64")[inside]
    pieces = survival * np.diff(np.r_[times, horizon])
    total = float(pieces.sum())
    after = total - np.r_[0.0, np.cumsum(pieces)[:-1]]  # the area from each time to the horizon
    table = fit.event_table.reindex(times)
    deaths, at_risk = table["observed"].to_numpy(dtype="float64"), table["at_risk"].to_numpy(dtype="float64")
    usable = (deaths > 0) & (at_risk > deaths)
    variance = float(np.sum(after[usable] ** 2 * deaths[usable] / (at_risk[usable] * (at_risk[usable] - deaths[usable]))))
    return total, variance


def restricted_means(endpoints: pd.DataFrame, groups: pd.Series, horizon: float, alpha: float = 0.05) -> pd.DataFrame:
    """Per group: its runs, how many reached the threshold and how many are censored, and the
    restricted mean steps to reach it within the horizon (restricted_mean) with its 1 − alpha normal
    interval."""
    from scipy.stats import norm

    rows = []
    joined = endpoints[["time", "reached"]].join(groups.rename("group"), how="inner").dropna(subset=["time"])
    z = norm.ppf(1 - alpha / 2)
    for group, runs in joined.groupby("group", sort=False):
        fit = _fitted(np.minimum(runs["time"], horizon), runs["reached"] & (runs["time"] <= horizon), alpha)
        mean, variance = restricted_mean(fit, horizon)
        half = z * math.sqrt(variance)
        rows.append({"group": group, "runs": len(runs), "reached": int(runs["reached"].sum()),
                     "censored": int((~runs["reached"].astype(bool)).sum()), "rmst": mean,
                     "low": mean - half, "high": mean + half})
    return pd.DataFrame(rows, columns=list(RMST_COLUMNS))
