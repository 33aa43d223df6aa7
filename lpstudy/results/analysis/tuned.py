"""p's tuned profile per p group: what each p reached, compared fairly.

In a search, the scatter of final loss against p shows where the sampler went as much as what p
does: it crowds the good region, so a group's lowest loss is a best-of-n that falls with n alone.
Per p group (the charts' bins, lpstudy.results.analysis.groups) the profile therefore gives the
expected best of m runs (lpstudy.results.analysis.best_of_m; Dodge et al. 2019), m the same for
every group: the smallest group's count, with a bootstrap interval where the group holds at least
3 runs; beside it the lowest loss found (best, best_trial) and, where a group holds at least
TUNED_TOP runs, the mean of its TUNED_TOP lowest. p's effect with the learning rate and the gain held
apart is the surrogate's profile (lpstudy.results.answers.surrogate), not this.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.best_of_m import best_of_m_interval, expected_best_of_m
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.selection import finished

TUNED_TOP = 3  # the mean of this many lowest losses per p group, where the group holds as many
MIN_M = 2  # the expected best of m is a comparison from m = 2 runs up; a group of one shows its best found alone
TUNED_COLUMNS = ("p_bin", "p", "p_low", "p_high", "p_order", "n", "m", "expected_best", "expected_low",
                 "expected_high", "best", "best_trial", "n_top", "top_mean")


def tuned_profile(trials: pd.DataFrame, bins: int | Sequence[float] | None = None, top: int = TUNED_TOP
                  ) -> pd.DataFrame:
    """Per p group (bins as p_bins takes them): n, the completed runs that did not diverge; m, the
    smallest n of any group holding MIN_M runs or more (NaN where none does); expected_best (NaN for a
    group under MIN_M runs: its best found alone), the expected lowest loss of m of the group's runs, with
    expected_low/high its 95 % bootstrap interval (NaN under 3 runs); best, the lowest loss found and
    best_trial its trial number; n_top = top where n ≥ top (else 0) and top_mean, the mean of the
    top lowest (NaN where n < top). Groups without such a run are left out; sorted by p, ∞ last."""
    done = finished(trials)
    done = done[done["p"].notna()]
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in TUNED_COLUMNS})
    if done.empty:
        return empty
    groups = done.join(p_bins(done["p"], bins))
    groups = groups[groups["loss"].notna()]
    if groups.empty:
        return empty
    by_group = list(groups.groupby("p_bin", sort=False))
    sizes = [len(group) for _, group in by_group if len(group) >= MIN_M]
    m = min(sizes) if sizes else math.nan  # a group of one has no "best of" to compare: its best found only
    rows = []
    for label, group in by_group:
        ranked = group.sort_values(["loss", "number"])
        losses = ranked["loss"].to_numpy()
        compared = len(losses) >= MIN_M and not math.isnan(m)
        low, high = best_of_m_interval(losses, int(m)) if compared else (math.nan, math.nan)
        enough = len(losses) >= top
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_low": float(group["p_low"].min()),
                     "p_high": float(group["p_high"].max()), "p_order": float(group["p_order"].iloc[0]),
                     "n": len(group), "m": m, "expected_best": expected_best_of_m(losses, int(m)) if compared else math.nan,
                     "expected_low": low, "expected_high": high, "best": float(losses[0]),
                     "best_trial": int(ranked["number"].iloc[0]), "n_top": top if enough else 0,
                     "top_mean": float(losses[:top].mean()) if enough else math.nan})
    return pd.DataFrame(rows).sort_values("p_order", ignore_index=True)[list(TUNED_COLUMNS)]


__all__ = ["TUNED_COLUMNS", "TUNED_TOP", "tuned_profile"]
