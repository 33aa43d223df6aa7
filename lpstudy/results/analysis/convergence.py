"""Convergence: per run, the steps to reach a validation-loss threshold (censored where the run stops
before it) and the area under its validation curve, read from the stored curves; median bands.

The two endpoints of a run (run_endpoints), both over the shared step budget (the horizon, the
max_steps every compared run has: shared_horizon):
- steps to the threshold: where the validation curve crosses it, interpolated linearly between the
  last evaluation above it and the first at or below it (crossing_steps). The crossing is only known
  to lie between those two evaluations (an interval-censored time: Turnbull, "The empirical
  distribution function with arbitrarily grouped, censored and truncated data", JRSS B 38, 1976);
  the linear interpolation places it inside that interval from the two losses, less biased than the
  interval's end or its midpoint (Law & Brookmeyer, "Effects of mid-point imputation on the analysis
  of doubly censored data", Statistics in Medicine 11, 1992, measure the midpoint's bias). The gap
  between the two evaluations is kept per run (`resolution`): the step is known to that and no
  finer. A run already at or below the threshold at its first evaluation reached it at or before
  that step (`resolution` 0 there: no earlier evaluation brackets it). A run that never gets there is
  censored, and why is kept: "not reached" (it ran to its end), "diverged" (it never will: censored at
  the horizon, as a run that ran out of budget, so that an arm that diverges more is never read as
  faster), "failed" (a FAIL run: it may be run again), "pruned" and "running" (the three censored
  where their curve stops). The restricted steps min(T, horizon) are known exactly for every run but
  a pruned, FAIL or running one that has not reached it: that is the per-run quantity whose mean is the restricted mean time (Royston &
  Parmar 2013), and what the paired verdicts compare fold by fold (lpstudy.results.answers.convergence).
- the area under the validation curve from its first evaluation to the horizon, by the trapezoid
  rule, divided by the steps spanned: the mean loss over training, lower for a run that converges
  sooner; always defined for a run that ran its budget. A diverged run keeps its score (ln V, the
  loss of guessing uniformly) from where its curve stops to the horizon; a pruned or running run
  has none (NaN).
Everything is computed on the whole curves table at once (numpy over the sorted rows), so 100,000
runs × 50 evaluations take well under a second (benchmarks/bench_convergence.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.selection import finished, successful

DEFAULT_THRESHOLD_MARGIN = 0.02  # the default threshold: 2 % above the worst arm's median final loss
THRESHOLD_QUANTILE = 0.75  # a search's default: the final loss three quarters of its successful runs reached
CENSOR_REASONS = ("not reached", "diverged", "failed", "pruned", "running")
ENDPOINT_COLUMNS = ("trial_id", "reached", "steps", "seconds", "time", "censored", "restricted_steps", "auc",
                    "failed", "resolution", "at_first")


def default_threshold(trials: pd.DataFrame, arm: str | None = None, spec: StudySpec | None = None) -> float:
    """The loss threshold a study's convergence is read at unless the reader picks one: the study's
    own loss_threshold; else, with arms (a column of `trials`), 2 % above the largest of the arms'
    median final losses, a loss the typical run of every arm reaches; else (a search) the final loss
    three quarters of the successful runs reached. Rounded to 3 decimals, so that it reads the same
    everywhere it is stated."""
    stated = spec.loss_threshold if spec is not None else None
    if stated:
        return float(stated)
    ok = successful(trials) if len(trials) else trials
    if ok is None or ok.empty:
        return 2.0
    if arm is not None and arm in ok:
        worst = float(ok.groupby(arm)["loss"].median().max())
        return round(worst * (1 + DEFAULT_THRESHOLD_MARGIN), 3)
    return round(float(ok["loss"].quantile(THRESHOLD_QUANTILE)), 3)


def threshold_rule(arms: bool, spec: StudySpec | None = None) -> str:
    """The default threshold's rule, in words (the page, the report and `lpstudy verdict` say it)."""
    if spec is not None and spec.loss_threshold:
        return "the study's loss_threshold"
    if arms:
        return f"{100 * DEFAULT_THRESHOLD_MARGIN:g} % above the largest of the arms' median final validation losses"
    return f"the final validation loss {100 * THRESHOLD_QUANTILE:g} % of the successful runs reached"


def shared_horizon(trials: pd.DataFrame, curves: pd.DataFrame | None = None) -> float:
    """The step budget every compared run shares: the smallest max_steps of the COMPLETE runs (the
    largest evaluated step where the runs do not say their max_steps)."""
    if len(trials) and "max_steps" in trials:
        budgets = trials["max_steps"].to_numpy(dtype="float64")[(trials["state"] == "COMPLETE").to_numpy()]
        budgets = budgets[~np.isnan(budgets)]
        if len(budgets):
            return float(budgets.min())
    if curves is not None and len(curves):
        return float(curves["step"].max())
    return math.nan


def _sorted(curves: pd.DataFrame, column: str, key: str) -> pd.DataFrame:
    """The curve rows with a value, sorted by run and step."""
    wanted = [key, "step", column, *(["elapsed_s"] if "elapsed_s" in curves else [])]
    rows = curves[wanted].dropna(subset=[column, "step"])
    runs, steps = rows[key].to_numpy(dtype="float64"), rows["step"].to_numpy(dtype="float64")
    if not len(steps):
        return rows
    order = runs * (float(np.max(np.abs(steps))) + 1.0) + steps  # one sort key: run, then step (exact below 2⁵³)
    if np.all(order[1:] >= order[:-1]):  # read in that order already (the metrics table's index)
        return rows
    return rows.iloc[np.argsort(order, kind="stable")]


def crossing_steps(rows: pd.DataFrame, column: str, key: str, threshold: float) -> pd.DataFrame:
    """Per run of `rows` (sorted by run and step, as _sorted gives them) that reaches the threshold:
    step (where the curve crosses it, linear between the last evaluation above it and the first at
    or below it), resolution (the steps between those two evaluations: the crossing is known to lie
    there), at_first (already at or below it at the run's first evaluation: step is that
    evaluation's, resolution 0) and elapsed_s (interpolated the same way, where the rows have it)."""
    runs = rows[key].to_numpy()
    steps = rows["step"].to_numpy(dtype="float64")
    values = rows[column].to_numpy(dtype="float64")
    below = values <= threshold
    starts = np.r_[True, runs[1:] != runs[:-1]] if len(runs) else np.zeros(0, bool)
    # the first hit of each run: below, and no earlier row of the same run below
    counted = np.cumsum(below)
    run_of_row = np.cumsum(starts) - 1
    seen = counted - (counted - below)[np.flatnonzero(starts)][run_of_row] if len(runs) else counted
    first = below & (seen == 1)
    at = np.flatnonzero(first)
    at_first = starts[at]
    before = np.where(at_first, at, at - 1)
    drop = values[before] - values[at]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(at_first | ~(drop > 0), 1.0, (values[before] - threshold) / drop)
    share = np.clip(share, 0.0, 1.0)
    out = pd.DataFrame({"step": steps[before] + share * (steps[at] - steps[before]),
                        "resolution": steps[at] - steps[before], "at_first": at_first},
                       index=pd.Index(runs[at], name=key))
    if "elapsed_s" in rows:
        elapsed = rows["elapsed_s"].to_numpy(dtype="float64")
        out["elapsed_s"] = elapsed[before] + share * (elapsed[at] - elapsed[before])
    return out


def evaluation_interval(rows: pd.DataFrame, key: str) -> float:
    """The steps between a study's evaluations: the median gap between a run's successive
    evaluations (NaN with fewer than two evaluations anywhere)."""
    runs = rows[key].to_numpy()
    gaps = np.diff(rows["step"].to_numpy(dtype="float64"))[runs[1:] == runs[:-1]] if len(runs) > 1 else np.zeros(0)
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if len(gaps) else math.nan


def steps_to_threshold(curves: pd.DataFrame, threshold: float, column: str = "val_loss",
                       key: str = "trial_number") -> pd.Series:
    """Per run (`key`), the step at which `column` crosses the threshold, interpolated between the
    two evaluations around it (crossing_steps); NaN if never."""
    if curves.empty:
        return pd.Series(dtype="float64", name="steps_to_threshold")
    rows = _sorted(curves, column, key)
    out = crossing_steps(rows, column, key, threshold)["step"].reindex(pd.unique(rows[key]))
    out.index.name = key
    return out.rename("steps_to_threshold")


def _areas(rows: pd.DataFrame, column: str, key: str, upto: float = math.inf) -> pd.DataFrame:
    """Per run: the trapezoid area of `column` over its evaluations up to step `upto`, its first and
    last step there and its last value (rows sorted by run and step)."""
    rows = rows[rows["step"].to_numpy() <= upto]
    runs = rows[key].to_numpy()
    steps = rows["step"].to_numpy(dtype="float64")
    values = rows[column].to_numpy(dtype="float64")
    starts = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]]) if len(runs) else np.zeros(0, dtype=int)
    ends = np.r_[starts[1:], len(runs)] - 1
    segment = np.diff(steps, prepend=np.nan) * (values + np.r_[np.nan, values[:-1]]) / 2
    segment[starts] = 0.0
    area = np.add.reduceat(segment, starts) if len(starts) else np.zeros(0)
    return pd.DataFrame({"area": area, "first": steps[starts], "last": steps[ends], "last_value": values[ends]},
                        index=pd.Index(runs[starts], name=key))


def area_under_curve(curves: pd.DataFrame, column: str = "val_loss", key: str = "trial_number") -> pd.Series:
    """Per run, the area under `column` against step by the trapezoid rule, divided by the steps it
    spans: the mean loss over training (lower = faster convergence). NaN with fewer than 2
    evaluations."""
    if curves.empty:
        return pd.Series(dtype="float64", name="auc")
    parts = _areas(_sorted(curves, column, key), column, key)
    span = parts["last"] - parts["first"]
    return (parts["area"] / span.where(span > 0)).rename("auc")


def run_endpoints(curves: pd.DataFrame, trials: pd.DataFrame, threshold: float, horizon: float | None = None,
                  column: str = "val_loss") -> pd.DataFrame:
    """Per run with a curve (not WAITING), indexed by trial_id (unique across the studies a
    comparison joins): reached (bool), steps (the first step at or below the threshold, NaN if
    never), seconds (the run's elapsed time there), time and censored (what a survival curve takes:
    the step it reached it, else where it is censored, with the reason, one of CENSOR_REASONS; ""
    where reached), restricted_steps (min(steps, horizon) where known), auc (the mean loss over the
    steps up to the horizon) and failed (diverged or FAIL: such runs count, never dropped)."""
    if curves.empty or trials.empty or column not in curves:
        return pd.DataFrame(columns=list(ENDPOINT_COLUMNS)).set_index("trial_id")
    horizon = shared_horizon(trials, curves) if horizon is None or not math.isfinite(horizon) else float(horizon)
    rows = _sorted(curves, column, "trial_id")
    runs = trials[trials["state"] != "WAITING"].drop_duplicates("trial_id").set_index("trial_id")
    rows = rows[rows["trial_id"].isin(runs.index)]
    hit = crossing_steps(rows, column, "trial_id", threshold)
    parts = _areas(rows, column, "trial_id", horizon)
    last_seen = rows.groupby("trial_id", sort=True)["step"].max()
    out = pd.DataFrame(index=last_seen.index)
    info = runs.reindex(out.index)
    state = info["state"].fillna("RUNNING").to_numpy(dtype=object)
    diverged = info["diverged"].fillna(False).astype(bool).to_numpy() if "diverged" in info else np.zeros(len(out), bool)
    failed = diverged | (state == "FAIL")
    out["reached"] = out.index.isin(hit.index)
    out["steps"] = hit["step"].astype("float64").reindex(out.index)
    out["seconds"] = hit["elapsed_s"].astype("float64").reindex(out.index) if "elapsed_s" in hit else math.nan
    # the steps between the two evaluations around the crossing; a run that never crossed: its own interval
    own = evaluation_interval(rows, "trial_id")
    out["resolution"] = hit["resolution"].astype("float64").reindex(out.index).fillna(own)
    out["at_first"] = hit["at_first"].reindex(out.index).fillna(False).astype(bool)
    reason = np.select([out["reached"].to_numpy(), diverged, state == "FAIL", state == "COMPLETE",
                        state == "RUNNING"], ["", "diverged", "failed", "not reached", "running"], "pruned")
    out["censored"] = reason
    never = np.isin(reason, ["not reached", "diverged"])  # will not reach it within the horizon
    out["time"] = np.where(out["reached"], out["steps"], np.where(never, horizon, last_seen.to_numpy(dtype="float64")))
    out["restricted_steps"] = np.where(out["reached"], np.minimum(out["steps"], horizon), np.where(never, horizon, np.nan))
    area = parts.reindex(out.index)
    fill = info["value"].astype("float64").to_numpy() if "value" in info else np.full(len(out), np.nan)
    tail = np.clip(horizon - area["last"].to_numpy(), 0, None)  # a diverged run's score over the steps it did not run
    area_sum = area["area"].to_numpy() + np.where(diverged, tail * fill, 0.0)
    end = np.where(diverged, np.maximum(area["last"].to_numpy(), horizon), area["last"].to_numpy())
    span = end - area["first"].to_numpy()
    ran_out = (state == "COMPLETE") | diverged  # a run that ran its budget (or diverged) has an area
    with np.errstate(invalid="ignore", divide="ignore"):
        out["auc"] = np.where(ran_out & (span > 0), area_sum / span, np.nan)
    out["failed"] = failed
    return out[[c for c in ENDPOINT_COLUMNS if c != "trial_id"]]


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
