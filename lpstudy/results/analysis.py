"""The numbers behind every chart: pure functions over the trials and curves frames of
lpstudy.results.frames. No I/O, no plotting; the dashboard, `lpstudy report` and `lpstudy status` share them.

Conventions:
- A trial's loss is its final validation loss: the value of a COMPLETE trial that did not diverge.
  Diverged trials (COMPLETE with diverged=True, valued ln V) count in divergence rates, never in
  loss averages.
- p may be ∞. Groups of p ("p bins") are either the exact values (a replicate study's grid) or
  equal-width bins over the finite range, with ∞ always a bin of its own, last.
- Intervals are 95 % by default: Student's t for means, Wilson's for rates.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from lpstudy.results.best import ranked_frame
from lpstudy.values import STATES, format_p

INF_LABEL = "∞"
EXACT_P_LIMIT = 12  # at most this many distinct p values are shown as they are, more are binned
DEFAULT_P_BINS = 8


# --- p: labels, positions and bins -----------------------------------------------------------

def inf_position(p: Iterable[float]) -> float:
    """Where p = ∞ is drawn on a p axis: right of the largest finite p, by a visible gap."""
    finite = [v for v in p if v is not None and math.isfinite(v)]
    if not finite:
        return 1.0
    low, high = min(finite), max(finite)
    return high + max(0.5, 0.15 * (high - low))


def p_positions(p: pd.Series) -> pd.Series:
    """p for an axis: ∞ replaced by inf_position, finite values as they are."""
    where = inf_position(p.tolist())
    return p.where(~np.isinf(p), where)


def p_ticks(p: pd.Series) -> tuple[list[float], list[str]] | None:
    """Tick values and labels for a p axis holding ∞; None when every p is finite."""
    values = p.dropna()
    if not np.isinf(values).any():
        return None
    finite = values[np.isfinite(values)]
    if finite.empty:
        return [1.0], [INF_LABEL]
    ticks = list(np.unique(np.round(np.linspace(finite.min(), finite.max(), 5), 2)))
    return [*ticks, inf_position(values.tolist())], [*(format_p(t) for t in ticks), INF_LABEL]


def exact_p_fit(p: pd.Series) -> bool:
    """Whether the distinct p values can each have a place and a label of their own on a p axis:
    at most EXACT_P_LIMIT of them, no two finite ones closer than 1/EXACT_P_LIMIT of their range (a
    grid such as 1, 1.5, …, 4 fits; a search's 3.49, 3.52, 3.54 would print labels over each other)."""
    values = np.unique(p.dropna().to_numpy(dtype="float64"))
    if len(values) > EXACT_P_LIMIT:
        return False
    finite = values[np.isfinite(values)]
    if len(finite) < 3:
        return True
    return float(np.diff(finite).min()) >= (finite[-1] - finite[0]) / EXACT_P_LIMIT


def default_p_bins(p: pd.Series) -> int | None:
    """None (the exact values) where they fit on an axis (exact_p_fit), else a number of equal-width
    bins: DEFAULT_P_BINS, fewer for a few values (about √n + 1, so that bins hold more than one)."""
    if exact_p_fit(p):
        return None
    distinct = int(np.isfinite(np.unique(p.dropna().to_numpy(dtype="float64"))).sum())
    return int(max(2, min(DEFAULT_P_BINS, round(math.sqrt(distinct)) + 1)))


def p_bins(p: pd.Series, bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """The p group of every value, indexed like p: columns p_bin (label), p_center (a representative
    p; ∞ for ∞), p_low, p_high, p_order (sort key; ∞ last). bins: None for the exact values, an
    int for that many equal-width bins over the finite range, or a sequence of edges."""
    p = p.astype("float64")
    out = pd.DataFrame(index=p.index, columns=["p_bin", "p_center", "p_low", "p_high", "p_order"])
    finite = np.isfinite(p)
    infinite = np.isinf(p)
    if bins is None:
        out.loc[p.notna(), "p_bin"] = p[p.notna()].map(format_p)
        out["p_center"] = out["p_low"] = out["p_high"] = out["p_order"] = p
    else:
        if isinstance(bins, int):
            values = p[finite]
            low, high = (values.min(), values.max()) if len(values) else (1.0, 1.0)
            if high <= low:
                edges = np.array([low - 1e-9, high + 1e-9])
            else:
                edges = np.linspace(low, high, max(1, bins) + 1)
        else:
            edges = np.asarray(sorted(bins), dtype="float64")
        index = np.clip(np.searchsorted(edges, p[finite], side="right") - 1, 0, len(edges) - 2)
        lows, highs = edges[index], edges[index + 1]
        out.loc[finite, "p_low"] = lows
        out.loc[finite, "p_high"] = highs
        out.loc[finite, "p_center"] = (lows + highs) / 2
        out.loc[finite, "p_order"] = index.astype("float64")
        out.loc[finite, "p_bin"] = [f"{format_p(a)}–{format_p(b)}" for a, b in zip(lows, highs)]
        out.loc[infinite, ["p_low", "p_high", "p_center", "p_order"]] = math.inf
    out.loc[infinite, "p_bin"] = INF_LABEL
    for column in ("p_center", "p_low", "p_high", "p_order"):
        out[column] = out[column].astype("float64")
    return out


# --- which trials count ----------------------------------------------------------------------

def finished(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials (diverged ones included), each with `loss`: its final validation loss, NaN
    for a diverged run."""
    done = trials[trials["state"] == "COMPLETE"].copy()
    value = done["value"].where(done["value"].notna(), done.get("final_val_loss"))
    done["loss"] = value.where(~done["diverged"].astype(bool))
    return done


def successful(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials that did not diverge and have a loss."""
    done = finished(trials)
    return done[done["loss"].notna()]


def data_problem(trials: pd.DataFrame) -> str | None:
    """Why a study has nothing to chart yet (no trials, none completed, all diverged), as one
    sentence for the page; None when there are results."""
    if trials is None or trials.empty:
        return "This study has no trials yet. Start workers with `lpstudy worker --study NAME`."
    counts = state_counts(trials)
    if counts["COMPLETE"] == 0:
        busy = f"{counts['RUNNING']} running, {counts['WAITING']} waiting"
        return f"No trial has completed yet ({busy}); results appear here as trials finish."
    if successful(trials).empty:
        return (f"Every completed trial diverged ({counts['COMPLETE']} of them): there is no validation "
                "loss to compare. Try smaller learning rates or gains; divergence rates are on the Stability page.")
    return None


# --- intervals -------------------------------------------------------------------------------

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
    """Wilson's score interval for a proportion; (NaN, NaN) when n = 0."""
    from scipy.special import ndtri

    if n <= 0:
        return math.nan, math.nan
    z = float(ndtri(0.5 + confidence / 2))
    phat = successes / n
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high


# --- effect of p ------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("p_bin", "p", "p_low", "p_high", "n", "n_ok", "n_diverged", "divergence_rate",
                   "mean", "std", "sem", "ci_low", "ci_high", "median", "best")


def per_p_summary(trials: pd.DataFrame, bins: int | Sequence[float] | None = None,
                  confidence: float = 0.95) -> pd.DataFrame:
    """Final validation loss per p (exact values by default, or bins; see p_bins): one row per p
    group, sorted by p with ∞ last. n counts COMPLETE trials, n_ok those that did not diverge; mean,
    std (ddof 1), sem, the t interval (ci_low, ci_high), median and best are over the n_ok losses."""
    done = finished(trials)
    done = done[done["p"].notna()]
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in SUMMARY_COLUMNS})
    groups = done.join(p_bins(done["p"], bins))
    rows = []
    for label, group in groups.groupby("p_bin", sort=False):
        losses = group["loss"].dropna()
        mean, low, high = t_interval(losses, confidence)
        std = float(losses.std(ddof=1)) if len(losses) > 1 else math.nan
        rows.append({
            "p_bin": label, "p": group["p_center"].iloc[0], "p_low": group["p_low"].min(),
            "p_high": group["p_high"].max(), "p_order": group["p_order"].iloc[0],
            "n": len(group), "n_ok": len(losses), "n_diverged": int(group["diverged"].sum()),
            "divergence_rate": float(group["diverged"].mean()),
            "mean": mean, "std": std, "sem": std / math.sqrt(len(losses)) if len(losses) > 1 else math.nan,
            "ci_low": low, "ci_high": high,
            "median": float(losses.median()) if len(losses) else math.nan,
            "best": float(losses.min()) if len(losses) else math.nan,
        })
    out = pd.DataFrame(rows).sort_values("p_order", ignore_index=True)
    return out[list(SUMMARY_COLUMNS)]


PAIRED_COLUMNS = ("p", "p_bin", "n_pairs", "n_excluded", "mean_loss", "ref_mean_loss", "mean_diff",
                  "std_diff", "ci_low", "ci_high", "relative_diff", "t_stat", "p_value")


def paired_comparison(trials: pd.DataFrame, reference_p: float = 2.0, confidence: float = 0.95,
                      pair_on: str = "fold") -> pd.DataFrame:
    """For a replicate study: per p ≠ reference_p, the paired difference loss(p) − loss(reference)
    across folds (pair_on), with its t interval. A negative mean_diff means p beats the reference.
    Pairs where either run diverged, or either side is missing, are left out (n_excluded counts the
    folds of p left out). Several completed runs of one (p, fold) are averaged. relative_diff is
    mean_diff / ref_mean_loss over the same pairs. Empty when the reference p has no run."""
    from scipy.special import stdtr

    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in PAIRED_COLUMNS})
    done = finished(trials)
    done = done[done["p"].notna() & done[pair_on].notna()]
    if done.empty:
        return empty
    # one loss per (p, fold): NaN when any run of the cell diverged
    cells = done.groupby(["p", pair_on]).agg(loss=("loss", "mean"), diverged=("diverged", "any"))
    cells.loc[cells["diverged"], "loss"] = math.nan
    table = cells["loss"].unstack(pair_on)
    matches = np.isclose(table.index.to_numpy(dtype="float64"), reference_p) | (
        np.isinf(reference_p) & np.isinf(table.index.to_numpy(dtype="float64")))
    if not matches.any():
        return empty
    reference = table[matches].iloc[0]
    rows = []
    for p, losses in table[~matches].iterrows():
        ran = int(cells.loc[p].shape[0])  # folds of this p with a completed run, diverged or not
        both = losses.notna() & reference.notna()
        diff = (losses - reference)[both]
        mean, low, high = t_interval(diff, confidence)
        std = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan
        ref_mean = float(reference[both].mean()) if both.any() else math.nan
        if len(diff) > 1 and std > 0:
            t_stat = mean / (std / math.sqrt(len(diff)))
            p_value = float(2 * stdtr(len(diff) - 1, -abs(t_stat)))
        else:
            t_stat = p_value = math.nan
        rows.append({"p": float(p), "p_bin": format_p(float(p)), "n_pairs": int(both.sum()),
                     "n_excluded": ran - int(both.sum()),
                     "mean_loss": float(losses[both].mean()) if both.any() else math.nan,
                     "ref_mean_loss": ref_mean, "mean_diff": mean, "std_diff": std,
                     "ci_low": low, "ci_high": high,
                     "relative_diff": mean / ref_mean if ref_mean else math.nan,
                     "t_stat": t_stat, "p_value": p_value})
    if not rows:
        return empty
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS)).sort_values("p", ignore_index=True)


def with_lr_bins(trials: pd.DataFrame, n_bins: int = 6) -> pd.DataFrame:
    """The trials with lr_bin (label), lr_center and lr_order: equal-width bins of log10(lr)."""
    out = trials.copy()
    lr = out["lr"].astype("float64")
    valid = lr.notna() & (lr > 0)
    logs = np.log10(lr[valid])
    out["lr_bin"], out["lr_center"], out["lr_order"] = None, math.nan, math.nan
    if logs.empty:
        return out
    low, high = logs.min(), logs.max()
    edges = np.linspace(low, high, n_bins + 1) if high > low else np.array([low - 1e-9, high + 1e-9])
    index = np.clip(np.searchsorted(edges, logs, side="right") - 1, 0, len(edges) - 2)
    lows, highs = 10 ** edges[index], 10 ** edges[index + 1]
    out.loc[valid, "lr_order"] = index.astype("float64")
    out.loc[valid, "lr_center"] = np.sqrt(lows * highs)
    out.loc[valid, "lr_bin"] = [f"{a:.2g}–{b:.2g}" for a, b in zip(lows, highs)]
    return out


MAP_COLUMNS = ("p_bin", "p_order", "y_bin", "y_order", "n", "n_diverged", "divergence_rate", "mean_loss")


def map_axis(trials: pd.DataFrame) -> str | None:
    """What a p × … map is best drawn against: the learning rate where it varies, else the fold
    (a replicate grid), else None."""
    done = trials[trials["state"] == "COMPLETE"]
    if done["lr"].nunique() > 1:
        return "lr"
    if done["fold"].nunique() > 1:
        return "fold"
    return None


def p_map(trials: pd.DataFrame, p_bin_count: int | Sequence[float] | None = DEFAULT_P_BINS,
             lr_bin_count: int = 6, by: str = "lr") -> pd.DataFrame:
    """The p × learning-rate map (by="lr"; learning rates in log-spaced bins) or the p × fold map
    (by="fold"): one row per occupied cell (y_bin, y_order: the lr bin or the fold) with the mean
    final validation loss (non-diverged runs), the number of completed runs and the divergence rate."""
    done = finished(trials)
    done = done[done["p"].notna() & done[by].notna()]
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c in ("p_bin", "y_bin") else "float64")
                             for c in MAP_COLUMNS})
    cells = done.join(p_bins(done["p"], p_bin_count))
    if by == "lr":
        cells = with_lr_bins(cells, lr_bin_count).rename(columns={"lr_bin": "y_bin", "lr_order": "y_order"})
    else:
        cells = cells.assign(y_bin=cells[by].map(lambda v: f"{v:g}"), y_order=cells[by].astype("float64"))
    out = (cells.groupby(["p_order", "p_bin", "y_order", "y_bin"], sort=True)
           .agg(n=("state", "size"), n_diverged=("diverged", "sum"), mean_loss=("loss", "mean"))
           .reset_index())
    out["divergence_rate"] = out["n_diverged"] / out["n"]
    return out[list(MAP_COLUMNS)]


def param_importance(trials: pd.DataFrame, params: Sequence[str] = ("p", "lr", "gain_init", "fold"),
                     seed: int = 0) -> pd.Series:
    """How much of the variation of the trial value each searched parameter explains (Optuna's
    PED-ANOVA evaluator, which needs no extra dependencies), over COMPLETE trials with diverged runs
    at their value ln V; sorted, summing to 1. Parameters that never vary are left out; empty
    when fewer than 4 trials completed."""
    import warnings

    import optuna
    from optuna.distributions import FloatDistribution

    done = trials[(trials["state"] == "COMPLETE") & trials["value"].notna()]
    columns = [c for c in params if c in done.columns and done[c].notna().all() and done[c].nunique() > 1]
    if len(done) < 4 or not columns:
        return pd.Series(dtype="float64", name="importance")
    values = done[columns].astype("float64").copy()
    if "p" in values:
        values["p"] = p_positions(values["p"])
    distributions = {}
    for name in columns:
        low, high = float(values[name].min()), float(values[name].max())
        log = name in ("lr", "gain_init") and low > 0
        distributions[name] = FloatDistribution(low, high, log=log)
    frozen = [optuna.trial.create_trial(params={c: float(row[c]) for c in columns},
                                        distributions=distributions, value=float(value))
              for (_, row), value in zip(values.iterrows(), done["value"])]
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(direction="minimize", storage=optuna.storages.InMemoryStorage())
    finally:
        optuna.logging.set_verbosity(verbosity)
    study.add_trials(frozen)
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            importances = optuna.importance.get_param_importances(study, evaluator=evaluator, normalize=True)
        except (ValueError, RuntimeError, ZeroDivisionError):
            return pd.Series(dtype="float64", name="importance")
    out = pd.Series(importances, dtype="float64", name="importance")
    return out.reindex(columns).fillna(0.0).sort_values(ascending=False)


# --- convergence ------------------------------------------------------------------------------

def with_p(curves: pd.DataFrame, trials: pd.DataFrame,
           columns: Sequence[str] = ("p", "lr", "gain_init", "fold", "state", "diverged")) -> pd.DataFrame:
    """The curves joined with each trial's p (and other columns) by trial number."""
    keep = ["number", *[c for c in columns if c in trials.columns]]
    return curves.merge(trials[keep].rename(columns={"number": "trial_number"}), on="trial_number", how="inner")


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
    """Per p group and step: the median of `column` across trials with the band between the 25th
    and 75th percentiles, and how many trials it is over. COMPLETE and PRUNED trials; diverged runs
    are left out unless include_diverged."""
    joined = with_p(curves, trials)
    joined = joined[joined["state"].isin(["COMPLETE", "PRUNED", "RUNNING"]) & joined["p"].notna()]
    if not include_diverged:
        joined = joined[~joined["diverged"].astype(bool)]
    joined = joined.dropna(subset=[column])
    columns = ["p_bin", "p_order", "p_center", "step", "median", "q25", "q75", "n"]
    if joined.empty:
        return pd.DataFrame(columns=columns)
    joined = joined.join(p_bins(joined["p"], bins))
    grouped = joined.groupby(["p_order", "p_bin", "step"], sort=True)[column]
    out = grouped.quantile([0.25, 0.5, 0.75]).unstack()
    out.columns = ["q25", "median", "q75"]
    out["n"] = grouped.size()
    out = out.reset_index()
    centers = joined.groupby("p_bin")["p_center"].first()
    out["p_center"] = out["p_bin"].map(centers)
    return out[columns]


# --- stability --------------------------------------------------------------------------------

def divergence_rates(trials: pd.DataFrame, bins: int | Sequence[float] | None = None,
                     confidence: float = 0.95) -> pd.DataFrame:
    """Per p group: completed runs, diverged runs, the rate and its Wilson interval."""
    summary = per_p_summary(trials, bins, confidence)
    lows, highs = zip(*(wilson_interval(int(k), int(n), confidence)
                        for k, n in zip(summary["n_diverged"], summary["n"]))) if len(summary) else ((), ())
    return pd.DataFrame({"p_bin": summary["p_bin"], "p": summary["p"], "n": summary["n"],
                         "n_diverged": summary["n_diverged"], "rate": summary["divergence_rate"],
                         "ci_low": list(lows), "ci_high": list(highs)})


def max_grad_norms(curves: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per trial with a curve: the largest gradient norm seen (grad_norm_max, else grad_norm),
    with its p, lr, state and whether it diverged."""
    if curves.empty:
        return pd.DataFrame(columns=["trial_number", "max_grad_norm", "p", "lr", "state", "diverged"])
    largest = curves.groupby("trial_number")[["grad_norm_max", "grad_norm"]].max()
    value = largest["grad_norm_max"].where(largest["grad_norm_max"].notna(), largest["grad_norm"])
    out = value.rename("max_grad_norm").reset_index()
    out = out.merge(trials[["number", "p", "lr", "state", "diverged"]].rename(columns={"number": "trial_number"}),
                    on="trial_number", how="inner")
    return out.dropna(subset=["max_grad_norm"])


def replicate_spread(trials: pd.DataFrame, bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """Per p group: how much the final validation loss varies across folds or seeds (standard
    deviation, range = max − min, and the coefficient of variation), over non-diverged runs."""
    done = successful(trials)
    done = done[done["p"].notna()]
    columns = ["p_bin", "p", "n", "std", "range", "cv"]
    if done.empty:
        return pd.DataFrame(columns=columns)
    groups = done.join(p_bins(done["p"], bins))
    out = (groups.groupby(["p_order", "p_bin"], sort=True)
           .agg(p=("p_center", "first"), n=("loss", "size"), std=("loss", "std"),
                low=("loss", "min"), high=("loss", "max"), mean=("loss", "mean"))
           .reset_index())
    out["range"] = out["high"] - out["low"]
    out["cv"] = out["std"] / out["mean"]
    return out[columns]


# --- overview: states, best, workers, grid -----------------------------------------------------

def state_counts(trials: pd.DataFrame) -> pd.Series:
    """Trials per state, every state present (0 where none), in the order of STATES."""
    counts = trials["state"].value_counts() if len(trials) else pd.Series(dtype="int64")
    return counts.reindex(STATES, fill_value=0).astype("int64")


def top_trials(trials: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k best trials (lpstudy.results.best), best first, with `loss`."""
    return ranked_frame(trials, k)


def best_trial(trials: pd.DataFrame) -> pd.Series | None:
    """The best trial (lpstudy.results.best), or None."""
    best = top_trials(trials, 1)
    return None if best.empty else best.iloc[0]


def running_trials(trials: pd.DataFrame, now: pd.Timestamp | None = None) -> pd.DataFrame:
    """RUNNING trials with who runs them and for how long: number, p, lr, gain_init, fold, device,
    host, worker, since, running_s, last_step, last_val_loss."""
    running = trials[trials["state"] == "RUNNING"].copy()
    columns = ["number", "p", "lr", "gain_init", "fold", "device", "host", "worker", "since",
               "running_s", "last_step", "last_val_loss"]
    if running.empty:
        return pd.DataFrame(columns=columns)
    since = pd.to_datetime(running["started_at"], utc=True, errors="coerce")
    fallback = pd.to_datetime(running["datetime_start"], errors="coerce")
    if fallback.dt.tz is None:  # Optuna stores the start as naive local time
        local = datetime.now().astimezone().tzinfo
        fallback = fallback.dt.tz_localize(local).dt.tz_convert("UTC")
    running["since"] = since.where(since.notna(), fallback)
    now = now or pd.Timestamp.now(tz="UTC")
    running["running_s"] = (now - running["since"]).dt.total_seconds()
    return running[columns].sort_values("number", ignore_index=True)


def grid_progress(trials: pd.DataFrame, spec: dict | None = None) -> dict | None:
    """For a replicate (grid) study: cells in the grid, cells done (a COMPLETE trial), running,
    waiting, and the fraction done; None for a study that is not a grid."""
    spec = spec or {}
    if spec.get("kind") != "replicate" and not spec.get("n_cells"):
        return None
    p_values = spec.get("p_values") or []
    folds = spec.get("folds")
    fold_count = len(folds) if isinstance(folds, (list, tuple)) else folds
    n_cells = int(spec.get("n_cells") or (len(p_values) * int(fold_count or 0)) or 0)
    done = trials[trials["state"] == "COMPLETE"]
    cells_done = len(done.drop_duplicates(["p", "fold"])) if len(done) else 0
    running = int((trials["state"] == "RUNNING").sum())
    waiting = int((trials["state"] == "WAITING").sum())
    n_cells = max(n_cells, cells_done)
    return {"n_cells": n_cells, "done": cells_done, "running": running, "waiting": waiting,
            "fraction": cells_done / n_cells if n_cells else 0.0}


def filter_trials(trials: pd.DataFrame, states: Iterable[str] | None = None,
                  p_range: tuple[float, float] | None = None, lr_range: tuple[float, float] | None = None,
                  diverged: bool | None = None, include_inf: bool = True) -> pd.DataFrame:
    """The trials matching every given condition: state in states, p within p_range (inclusive; ∞
    kept when include_inf), lr within lr_range (inclusive), diverged equal to the flag."""
    mask = pd.Series(True, index=trials.index)
    if states is not None:
        mask &= trials["state"].isin(list(states))
    if p_range is not None:
        finite = trials["p"].between(p_range[0], p_range[1])
        mask &= finite | (np.isinf(trials["p"]) & include_inf)
    if lr_range is not None:
        mask &= trials["lr"].between(lr_range[0], lr_range[1])
    if diverged is not None:
        mask &= trials["diverged"].astype(bool) == diverged
    return trials[mask]


# --- the stability lens: loss against learning rate, LR sensitivity, initial entropy -----------

LR_CURVE_COLUMNS = ("p_bin", "p", "p_order", "lr", "n", "n_diverged", "mean", "ci_low", "ci_high")
SENSITIVITY_COLUMNS = ("p_bin", "p", "p_order", "n_folds", "n_lrs", "lr_low", "lr_high", "best_lr",
                       "mean", "ci_low", "ci_high")


def capped_losses(trials: pd.DataFrame, initial_loss: float | None = None) -> pd.DataFrame:
    """COMPLETE trials with p and lr, each with `capped`: its final validation loss capped at the
    initial loss L0, a diverged run counting as L0 (Wortsman et al., arXiv:2309.14322, §2: "we
    use min(ℓ, ℓ0)" so that a diverged run weighs as much as one that learned nothing). L0 is
    `initial_loss`, else the value the objective gives a diverged run (ln V, the loss of a uniform
    guess, which is a fresh model's loss to within a few hundredths of a nat), else no cap."""
    done = finished(trials)
    done = done[done["p"].notna() & done["lr"].notna()].copy()
    diverged = done["diverged"].astype(bool)
    if initial_loss is None:
        values = done.loc[diverged, "value"].dropna()
        initial_loss = float(values.max()) if len(values) else math.inf
    raw = done["loss"].where(~diverged, initial_loss)
    done["capped"] = np.minimum(raw.astype("float64"), initial_loss)
    return done[done["capped"].notna()]


def lr_curve(trials: pd.DataFrame, initial_loss: float | None = None, confidence: float = 0.95,
             bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """Final validation loss against the learning rate, per p (one curve each): per (p, lr) the
    runs, the diverged ones, and the mean of the capped losses (capped_losses) with its t interval
    across folds or seeds. p is grouped as p_bins does (exact values, or `bins` for a search)."""
    done = capped_losses(trials, initial_loss)
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in LR_CURVE_COLUMNS})
    done = done.join(p_bins(done["p"], bins))
    rows = []
    for (order, label, lr), group in done.groupby(["p_order", "p_bin", "lr"], sort=True):
        mean, low, high = t_interval(group["capped"], confidence)
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_order": order, "lr": float(lr),
                     "n": len(group), "n_diverged": int(group["diverged"].astype(bool).sum()),
                     "mean": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=list(LR_CURVE_COLUMNS))


def lr_sensitivity(trials: pd.DataFrame, initial_loss: float | None = None, pair_on: str = "fold",
                   confidence: float = 0.95, bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """Learning-rate sensitivity per p (Wortsman et al., "Small-scale proxies for large-scale
    Transformer training instabilities", arXiv:2309.14322, §2): over a sweep of learning rates,

        LR sensitivity = E_lr[ min(ℓ(lr), ℓ0) − min_lr ℓ(lr) ]

    the expected excess of the final loss over the best one across the LR range, a diverged run
    (or one above the initial loss ℓ0) counting as ℓ0. It is computed per fold (pair_on: the
    replicates), over the learning rates that fold ran (several runs of one cell are averaged),
    and given per p as the mean across folds with its t interval. Only folds that ran every
    learning rate of their p count; a p with fewer than 2 learning rates has none. `best_lr` is
    the learning rate with the lowest mean capped loss across folds."""
    done = capped_losses(trials, initial_loss)
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in SENSITIVITY_COLUMNS})
    done = done[done[pair_on].notna()] if pair_on in done else done.iloc[0:0]
    if done.empty:
        return empty
    done = done.join(p_bins(done["p"], bins))
    rows = []
    for (order, label), group in done.groupby(["p_order", "p_bin"], sort=True):
        cells = group.groupby([pair_on, "lr"])["capped"].mean().unstack("lr")
        lrs = cells.columns.to_numpy(dtype="float64")
        if len(lrs) < 2:
            continue
        full = cells.dropna()  # the folds that ran every learning rate
        per_fold = full.mean(axis=1) - full.min(axis=1)
        mean, low, high = t_interval(per_fold, confidence)
        by_lr = cells.mean(axis=0)
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_order": order,
                     "n_folds": len(full), "n_lrs": len(lrs), "lr_low": float(lrs.min()),
                     "lr_high": float(lrs.max()), "best_lr": float(by_lr.idxmin()),
                     "mean": mean, "ci_low": low, "ci_high": high})
    if not rows:
        return empty
    return pd.DataFrame(rows, columns=list(SENSITIVITY_COLUMNS))


def initial_entropy(curves: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """The mean attention entropy at step 0 (before any update) per p and gain rule ('default':
    QKNorm's g₀, 'matched', 'fixed': a number; trials before the rule was stored count as
    'fixed'): p, p_bin, gain_rule, n, entropy (mean over runs), gain_init (mean)."""
    columns = ["p_bin", "p", "gain_rule", "n", "entropy", "gain_init"]
    if curves.empty or "attn_entropy" not in curves:
        return pd.DataFrame(columns=columns)
    rule = trials["gain_rule"] if "gain_rule" in trials else pd.Series(None, index=trials.index, dtype="object")
    info = trials.assign(gain_rule=rule.fillna("fixed"))[["number", "p", "gain_rule", "gain_init"]]
    start = curves[curves["step"] == 0].dropna(subset=["attn_entropy"])
    joined = start.merge(info.rename(columns={"number": "trial_number"}), on="trial_number", how="inner")
    joined = joined[joined["p"].notna()]
    if joined.empty:
        return pd.DataFrame(columns=columns)
    out = (joined.groupby(["gain_rule", "p"], sort=True)
           .agg(n=("attn_entropy", "size"), entropy=("attn_entropy", "mean"), gain_init=("gain_init", "mean"))
           .reset_index())
    out["p_bin"] = out["p"].map(format_p)
    return out[columns]


# --- equal-budget comparisons (lpstudy compare) ------------------------------------------------

ARM_COLUMNS = ("arm", "n_pairs", "n_excluded", "mean_loss", "ref_mean_loss", "mean_diff", "ci_low",
               "ci_high", "relative_diff", "p_value")


def paired_arms(trials: pd.DataFrame, reference: str, arm: str = "arm", pair_on: str = "fold",
                confidence: float = 0.95) -> pd.DataFrame:
    """For the replicate runs of a comparison (a trials frame with an `arm` column): per arm, the
    paired difference loss(arm) − loss(reference arm) across folds with its t interval, as
    paired_comparison does for p. Negative mean_diff: the arm beats the reference. A fold where
    either run diverged or is missing is left out (n_excluded). The reference arm is first."""
    from scipy.special import stdtr

    done = finished(trials)
    done = done[done[arm].notna() & done[pair_on].notna()]
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "arm" else "float64") for c in ARM_COLUMNS})
    if done.empty or reference not in set(done[arm]):
        return empty
    cells = done.groupby([arm, pair_on], sort=False).agg(loss=("loss", "mean"), diverged=("diverged", "any"))
    cells.loc[cells["diverged"], "loss"] = math.nan
    table = cells["loss"].unstack(pair_on)
    ref = table.loc[reference]
    order = [reference, *[a for a in dict.fromkeys(done[arm]) if a != reference]]
    rows = []
    for name in order:
        losses = table.loc[name]
        both = losses.notna() & ref.notna()
        diff = (losses - ref)[both]
        mean, low, high = t_interval(diff, confidence)
        std = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan
        ref_mean = float(ref[both].mean()) if both.any() else math.nan
        p_value = (float(2 * stdtr(len(diff) - 1, -abs(mean / (std / math.sqrt(len(diff))))))
                   if len(diff) > 1 and std > 0 else math.nan)
        ran = len(cells.loc[name])  # folds of this arm with a completed run, diverged or not
        rows.append({"arm": name, "n_pairs": int(both.sum()), "n_excluded": ran - int(both.sum()),
                     "mean_loss": float(losses[both].mean()) if both.any() else math.nan,
                     "ref_mean_loss": ref_mean, "mean_diff": mean, "ci_low": low, "ci_high": high,
                     "relative_diff": mean / ref_mean if ref_mean else math.nan, "p_value": p_value})
    return pd.DataFrame(rows, columns=list(ARM_COLUMNS))


def tuning_summary(trials: pd.DataFrame, arm: str = "arm") -> pd.DataFrame:
    """Per arm of a comparison's tuning studies: trials spent (COMPLETE, PRUNED, RUNNING or
    WAITING), completed, pruned, diverged, and the best trial's loss, lr and gain_init."""
    rows = []
    for name, group in trials.groupby(arm, sort=False):
        ok = successful(group)
        best = ok.sort_values(["loss", "number"]).iloc[0] if len(ok) else None
        rows.append({"arm": name, "spent": int(group["state"].isin(["COMPLETE", "PRUNED", "RUNNING", "WAITING"]).sum()),
                     "complete": int((group["state"] == "COMPLETE").sum()),
                     "pruned": int((group["state"] == "PRUNED").sum()),
                     "diverged": int(finished(group)["diverged"].astype(bool).sum()),
                     "best_loss": float(best["loss"]) if best is not None else math.nan,
                     "best_lr": float(best["lr"]) if best is not None else math.nan,
                     "best_gain_init": float(best["gain_init"]) if best is not None else math.nan})
    return pd.DataFrame(rows, columns=["arm", "spent", "complete", "pruned", "diverged", "best_loss", "best_lr",
                                       "best_gain_init"])
