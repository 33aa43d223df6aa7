"""How soon each group of runs reaches the loss threshold, with the runs that never get there
counted: Kaplan–Meier curves and the restricted mean steps.

Each run is a time to an event (reaching the threshold) or censored where it stops (its endpoints:
lpstudy.results.analysis.convergence.run_endpoints). Kaplan & Meier's product-limit estimator
("Nonparametric estimation from incomplete observations", JASA 53, 1958) gives the share of a group's
runs that have reached it by each step, with Greenwood's standard error: statsmodels'
SurvfuncRight, already a dependency (lifelines, the other well-kept choice, declares pandas < 3,
which the image's pinned pandas 3 refuses). The pointwise interval is the log(−log) one
(Kalbfleisch & Prentice, "The Statistical Analysis of Failure Time Data", 2nd ed. 2002; the default
of R's survival and lifelines), which stays within [0, 1].

The restricted mean time to reach it over the horizon τ, RMST = E[min(T, τ)], is the area under the
Kaplan–Meier curve up to τ (Royston & Parmar, "Restricted mean survival time: an alternative to the
hazard ratio for the design and analysis of randomized trials with a time-to-event outcome", BMC
Medical Research Methodology 13, 2013): defined whatever the share of censored runs, in steps, and
the same quantity the paired verdicts compare fold by fold.

Its variance: Greenwood's (restricted_mean) drops the term of an event time where every run at risk
reaches it (nᵢ = dᵢ), so a group whose runs were mostly pruned before a last lone event reads as
known exactly (zero width). The jackknife over the runs does not: the restricted mean's
pseudo-observations n·θ − (n − 1)·θ₍₋ᵢ₎ (Andersen, Hansen & Klein, "Regression analysis of restricted
mean survival time based on pseudo-observations", Lifetime Data Analysis 10, 2004), their variance / n
(jackknife_variance, the leave-one-out curves computed together with numpy, up to JACKKNIFE_RUNS runs;
Greenwood's above, where the nᵢ = dᵢ term is negligible). The interval is built on the logit of
RMST/τ and mapped back, so that it stays inside [0, τ] (as the log(−log) one stays in [0, 1]).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

REACH_COLUMNS = ("group", "step", "reached", "low", "high")
RMST_COLUMNS = ("group", "runs", "reached", "censored", "rmst", "low", "high")
JACKKNIFE_RUNS = 2000  # up to this many runs a group's variance is the jackknife's (n² numbers), above Greenwood's


def kaplan_meier(times, events, alpha: float = 0.05) -> pd.DataFrame:
    """The product-limit curve of one group: per event time (step 0 first, S = 1) the share S still
    short of the threshold, its 1 − alpha log(−log) interval, and the runs at risk and events there."""
    from scipy.stats import norm
    from statsmodels.duration.survfunc import SurvfuncRight

    times, events = np.asarray(times, dtype="float64"), np.asarray(events, dtype="float64")
    if not events.any():  # no run reached it: S stays 1
        return pd.DataFrame({"step": [0.0], "survival": [1.0], "low": [1.0], "high": [1.0], "at_risk": [len(times)],
                             "events": [0.0]})
    fit = SurvfuncRight(times, events)
    survival = np.asarray(fit.surv_prob, dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        log_s = np.log(survival)
        spread = np.asarray(fit.surv_prob_se, dtype="float64") / (survival * np.abs(log_s))  # se of log(−log S)
        z = norm.ppf(1 - alpha / 2)
        low, high = survival ** np.exp(z * spread), survival ** np.exp(-z * spread)
    defined = (survival > 0) & (survival < 1) & np.isfinite(spread)
    low, high = np.where(defined, low, survival), np.where(defined, high, survival)
    return pd.DataFrame({"step": np.r_[0.0, fit.surv_times], "survival": np.r_[1.0, survival],
                         "low": np.r_[1.0, low], "high": np.r_[1.0, high],
                         "at_risk": np.r_[len(times), fit.n_risk], "events": np.r_[0.0, fit.n_events]})


def restricted_mean(curve: pd.DataFrame, horizon: float) -> tuple[float, float]:
    """(the restricted mean time up to the horizon, its variance) of a Kaplan–Meier curve
    (kaplan_meier): the area under the step function up to τ, and Greenwood's variance of that area,
    Σ A(tᵢ)² dᵢ / (nᵢ (nᵢ − dᵢ)) over the event times tᵢ < τ, A(tᵢ) the area from tᵢ to τ (Klein &
    Moeschberger, "Survival Analysis", 2nd ed. 2003, §4.5)."""
    inside = curve["step"].to_numpy() < horizon
    times = curve["step"].to_numpy(dtype="float64")[inside]
    survival = curve["survival"].to_numpy(dtype="float64")[inside]
    pieces = survival * np.diff(np.r_[times, horizon])
    total = float(pieces.sum())
    after = total - np.r_[0.0, np.cumsum(pieces)[:-1]]  # the area from each time to the horizon
    deaths = curve["events"].to_numpy(dtype="float64")[inside]
    at_risk = curve["at_risk"].to_numpy(dtype="float64")[inside]
    usable = (deaths > 0) & (at_risk > deaths)
    variance = float(np.sum(after[usable] ** 2 * deaths[usable] / (at_risk[usable] * (at_risk[usable] - deaths[usable]))))
    return total, variance


def _areas_left_out(times: np.ndarray, events: np.ndarray, horizon: float) -> np.ndarray:
    """The restricted mean of the product-limit curve with each run left out in turn (one per run):
    the curves' at-risk and event counts less that run's, over the event times, all at once."""
    grid = np.unique(times[events & (times < horizon)])
    if not len(grid):
        return np.full(len(times), float(horizon))
    at_risk = (times[None, :] >= grid[:, None]).sum(axis=1).astype("float64")
    deaths = ((times[None, :] == grid[:, None]) & events[None, :]).sum(axis=1).astype("float64")
    risk = at_risk[None, :] - (times[:, None] >= grid[None, :])  # (left out, event time)
    dead = deaths[None, :] - ((times[:, None] == grid[None, :]) & events[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(risk > 0, 1.0 - dead / risk, 1.0)
    survival = np.cumprod(factor, axis=1)  # S just after each event time
    widths = np.diff(np.r_[grid, horizon])
    return grid[0] + (survival * widths[None, :]).sum(axis=1)


def jackknife_variance(times, events, horizon: float) -> float:
    """The jackknife variance of the restricted mean up to the horizon (Andersen, Hansen & Klein
    2004's pseudo-observations): (n − 1)/n · Σ (θ₍₋ᵢ₎ − θ̄)², never zero while the runs differ."""
    times = np.minimum(np.asarray(times, dtype="float64"), horizon)
    events = np.asarray(events, dtype=bool)
    n = len(times)
    if n < 2:
        return math.nan
    left_out = _areas_left_out(times, events, horizon)
    return float((n - 1) / n * np.sum((left_out - left_out.mean()) ** 2))


def bounded_interval(mean: float, variance: float, horizon: float, z: float) -> tuple[float, float]:
    """The normal interval of a restricted mean built on logit(RMST/τ) (the delta method) and
    mapped back: inside [0, τ]; the point itself where it sits on an end or the variance is 0."""
    share = mean / horizon
    if not (0.0 < share < 1.0) or not variance > 0 or not math.isfinite(variance):
        return mean, mean
    spread = math.sqrt(variance) / (horizon * share * (1 - share))
    logit = math.log(share / (1 - share))
    ends = [horizon / (1 + math.exp(-(logit + sign * z * spread))) for sign in (-1, 1)]
    return ends[0], ends[1]


def group_survival(endpoints: pd.DataFrame, groups: pd.Series, horizon: float, alpha: float = 0.05
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One Kaplan–Meier curve per group (the label of each run in `groups`, indexed like
    `endpoints`), in the order the groups first appear in `groups` (a page passes them in p order:
    its legend lists them so), its times cut at the horizon. Returns (reach: per group and step, the share of its
    runs that reached the threshold by that step, 1 − S(t), with its 1 − alpha interval,
    REACH_COLUMNS; restricted: per group its runs, how many reached it and how many are censored, and
    the restricted mean steps to reach it within the horizon (restricted_mean) with its 1 − alpha
    interval (jackknife variance, logit scale: bounded_interval), RMST_COLUMNS)."""
    from scipy.stats import norm

    curves, rows = [], []
    joined = endpoints[["time", "reached"]].join(groups.rename("group"), how="inner").dropna(subset=["time"])
    z = norm.ppf(1 - alpha / 2)
    for group in pd.unique(groups.dropna()):
        runs = joined[joined["group"] == group]
        if runs.empty:
            continue
        reached = runs["reached"].astype(bool) & (runs["time"] <= horizon)
        curve = kaplan_meier(np.minimum(runs["time"], horizon), reached, alpha)
        curves.append(pd.DataFrame({"group": group, "step": curve["step"], "reached": 1 - curve["survival"],
                                    "low": 1 - curve["high"], "high": 1 - curve["low"]}))
        mean, variance = restricted_mean(curve, horizon)
        if len(runs) <= JACKKNIFE_RUNS:
            variance = jackknife_variance(runs["time"].to_numpy(), reached.to_numpy(), horizon)
        low, high = bounded_interval(mean, variance, horizon, z)
        rows.append({"group": group, "runs": len(runs), "reached": int(reached.sum()),
                     "censored": int((~reached).sum()), "rmst": mean, "low": low, "high": high})
    reach = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=list(REACH_COLUMNS))
    return reach, pd.DataFrame(rows, columns=list(RMST_COLUMNS))
