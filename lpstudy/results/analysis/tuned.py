"""p's tuned profile: what p can reach when the other fields are tuned for it.

In a search, the scatter of final loss against p shows where the sampler went as much as what p
does: it crowds the good region, and p is confounded with the learning rate and the gain it was
run with. The question a user asks of a search is what each p reaches at its best settings, so per
p group (the charts' bins, lpstudy.results.analysis.groups) the profile gives the lowest final
validation loss found, the mean of the TOP lowest (less at the mercy of one lucky run), and how
many runs the group holds: a group with few runs was tuned less, and its best says less.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.selection import finished

TUNED_TOP = 3  # the profile's second curve: the mean of this many lowest losses per p group
TUNED_COLUMNS = ("p_bin", "p", "p_low", "p_high", "p_order", "n", "best", "best_trial", "n_top", "top_mean")


def tuned_profile(trials: pd.DataFrame, bins: int | Sequence[float] | None = None, top: int = TUNED_TOP
                  ) -> pd.DataFrame:
    """Per p group (bins as p_bins takes them, over the completed trials' p as per_p_summary groups
    them): n, the completed runs that did not diverge; best, the lowest final validation loss and
    best_trial, its trial number; n_top = min(top, n) and top_mean, the mean of the n_top lowest.
    Groups without such a run are left out; sorted by p, ∞ last."""
    done = finished(trials)
    done = done[done["p"].notna()]
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in TUNED_COLUMNS})
    if done.empty:
        return empty
    groups = done.join(p_bins(done["p"], bins))
    groups = groups[groups["loss"].notna()]
    rows = []
    for label, group in groups.groupby("p_bin", sort=False):
        ranked = group.sort_values(["loss", "number"])
        lowest = ranked["loss"].iloc[:top]
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_low": float(group["p_low"].min()),
                     "p_high": float(group["p_high"].max()), "p_order": float(group["p_order"].iloc[0]),
                     "n": len(group), "best": float(lowest.iloc[0]), "best_trial": int(ranked["number"].iloc[0]),
                     "n_top": len(lowest), "top_mean": float(lowest.mean()) if len(lowest) else math.nan})
    if not rows:
        return empty
    return pd.DataFrame(rows).sort_values("p_order", ignore_index=True)[list(TUNED_COLUMNS)]


__all__ = ["TUNED_COLUMNS", "TUNED_TOP", "tuned_profile"]
