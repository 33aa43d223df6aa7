"""Stability: divergence rates, largest gradient norms, the spread across folds or seeds."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.effect import per_p_summary
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.intervals import wilson_interval
from lpstudy.results.analysis.selection import successful


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
