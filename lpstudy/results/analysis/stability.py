"""Stability: divergence rates, largest gradient norms, the spread across folds or seeds."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.configurations import configuration_ids
from lpstudy.results.analysis.effect import per_p_summary
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.intervals import wilson_interval
from lpstudy.results.analysis.selection import finished, successful

RATE_COLUMNS = ["p_bin", "p", "n", "n_diverged", "rate", "ci_low", "ci_high", "n_configurations"]


def divergence_rates(trials: pd.DataFrame, bins: int | Sequence[float] | None = None,
                     confidence: float = 0.95, configurations: Sequence[str] = ()) -> pd.DataFrame:
    """Per p group: completed runs (n), diverged runs, the rate and its Wilson interval, and the
    configurations the runs are of (n_configurations). With `configurations` (a search's searched
    fields: answers.mixed_groups.search_fields), a configuration raced on several folds is one observation, not one per
    run (analysis.configurations): its share of runs that diverged counts once, the group's rate is
    the mean of those shares over its configurations, and Wilson's interval is over the
    configurations (its count the sum of the shares: a fractional count, which the score interval
    takes as it takes any proportion). Without, every run counts (a replicate's folds are its
    observations)."""
    if configurations:
        return _rates_per_configuration(trials, bins, confidence, configurations)
    summary = per_p_summary(trials, bins, confidence)
    lows, highs = zip(*(wilson_interval(int(k), int(n), confidence)
                        for k, n in zip(summary["n_diverged"], summary["n"]))) if len(summary) else ((), ())
    return pd.DataFrame({"p_bin": summary["p_bin"], "p": summary["p"], "n": summary["n"],
                         "n_diverged": summary["n_diverged"], "rate": summary["divergence_rate"],
                         "ci_low": list(lows), "ci_high": list(highs), "n_configurations": summary["n"]})


def _rates_per_configuration(trials: pd.DataFrame, bins, confidence: float, names: Sequence[str]) -> pd.DataFrame:
    done = finished(trials) if len(trials) else trials
    done = done[done["p"].notna()] if len(done) else done
    if done.empty:
        return pd.DataFrame(columns=RATE_COLUMNS)
    ids = configuration_ids(done, names)
    per = (done.assign(configuration=ids.to_numpy(), blown=done["diverged"].astype(bool).astype("float64"))
           .groupby("configuration").agg(p=("p", "first"), share=("blown", "mean"), runs=("blown", "size"),
                                         diverged=("blown", "sum")))
    per = per.join(p_bins(per["p"], bins))
    from lpstudy.intervals import wilson_interval

    rows = []
    for (order, label), group in per.groupby(["p_order", "p_bin"], sort=True):
        n, k = len(group), float(group["share"].sum())
        low, high = wilson_interval(k, n, confidence)
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "n": int(group["runs"].sum()),
                     "n_diverged": int(group["diverged"].sum()), "rate": k / n, "ci_low": low, "ci_high": high,
                     "n_configurations": n})
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


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
