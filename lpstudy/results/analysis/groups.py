"""p as the charts group it: labels, axis positions (∞ right of the largest finite p) and bins."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from lpstudy.design.space import Range
from lpstudy.design.spec import StudySpec
from lpstudy.values import format_p


INF_LABEL = "∞"
EXACT_P_LIMIT = 12  # at most this many distinct p values are shown as they are, more are binned
DEFAULT_P_BINS = 8


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
    """None (the exact values) where they fit on an axis (exact_p_fit) and are a grid's (each run
    more than once, or no more than three of them); else a number of equal-width bins that follows a
    search's spread phase (lpstudy.study.spread): the largest power of two that leaves two runs to a
    bin, 2 to DEFAULT_P_BINS. Sobol's first 2^m points put the same number of runs in each of those
    bins over p's range (the README's first 8 runs: 4 quarters of two), so no bin is a group of one."""
    values = p.dropna().to_numpy(dtype="float64")
    distinct, counts = np.unique(values, return_counts=True)
    repeated = len(distinct) <= 3 or float(np.median(counts)) >= 2
    if exact_p_fit(p) and repeated:
        return None
    finite = int(np.isfinite(values).sum())
    power = 2 ** int(math.floor(math.log2(max(finite, 4) / 2)))
    return int(max(2, min(DEFAULT_P_BINS, power)))


def p_range_edges(spec: StudySpec | None, n_bins: int | None) -> list[float] | None:
    """n_bins equal-width bins over the p range the study's spec searches (where the spread phase
    stratified its runs: the quarters of [1, 4] for 4); None where the spec searches no range of p."""
    entry = spec.space.get("p") if spec is not None else None
    if not n_bins or not isinstance(entry, Range):
        return None
    low, high = float(entry.low), float(entry.high)
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return None
    return [float(v) for v in np.linspace(low, high, int(n_bins) + 1)]


def page_p_groups(trials: pd.DataFrame, bins: int | Sequence[float] | None, spec: StudySpec | None = None
                  ) -> tuple[float, ...] | None:
    """The one grouping of p every chart of a page (and the report's section) uses: None for the
    exact values, edges as they are, a number of bins as edges over the spec's p range
    (p_range_edges) or, without one, over the completed trials' finite p, so that a chart over the
    successful runs and one over every completed run put a run in the same group."""
    if bins is None:
        return None
    if not isinstance(bins, (int, np.integer)):
        return tuple(float(v) for v in bins)
    edges = p_range_edges(spec, int(bins))
    if edges is None:
        p = trials.loc[trials["state"] == "COMPLETE", "p"].astype("float64").to_numpy() if len(trials) else np.array([])
        p = p[np.isfinite(p)]
        edges = list(bin_edges(p, int(bins))) if len(p) else None
    return tuple(float(v) for v in edges) if edges is not None else None


def default_p_groups(trials: pd.DataFrame, spec: StudySpec | None = None) -> tuple[float, ...] | None:
    """The p groups of a page unless the reader picks others: default_p_bins' count as page_p_groups
    makes it edges, or None (the exact values)."""
    if trials.empty or "p" not in trials:
        return None
    return page_p_groups(trials, default_p_bins(trials["p"]), spec)


def bin_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """The edges of n_bins equal-width bins over the range of values; one narrow bin when every
    value is the same."""
    low, high = (values.min(), values.max()) if len(values) else (1.0, 1.0)
    if high <= low:
        return np.array([low - 1e-9, high + 1e-9])
    return np.linspace(low, high, max(1, n_bins) + 1)


def equal_width_bins(values: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n_bins equal-width bins over the range of finite values: each value's bin index (0 first)
    and its bin's low and high edge. One narrow bin when every value is the same."""
    return bins_of(values, bin_edges(values, n_bins))


def bins_of(values: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each value's bin between sorted edges (values beyond them in the first or last bin): its
    index and its bin's low and high edge."""
    index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    return index, edges[index], edges[index + 1]


def p_bins(p: pd.Series, bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """The p group of every value, indexed like p: columns p_bin (label), p_center (a representative
    p; ∞ for ∞), p_low, p_high, p_order (sort key; ∞ last). bins: None for the exact values, an
    int for that many equal-width bins over the finite range, or a sequence of edges."""
    p = p.astype("float64")
    out = pd.DataFrame(index=p.index, columns=["p_bin", "p_center", "p_low", "p_high", "p_order"])
    finite = np.isfinite(p)
    infinite = np.isinf(p)
    if bins is None:
        known = p[p.notna()]
        out.loc[p.notna(), "p_bin"] = known.map({value: format_p(value) for value in known.unique()})  # once a value
        out["p_center"] = out["p_low"] = out["p_high"] = out["p_order"] = p
    else:
        if isinstance(bins, int):
            index, lows, highs = equal_width_bins(p[finite].to_numpy(), bins)
        else:
            index, lows, highs = bins_of(p[finite].to_numpy(), np.asarray(sorted(bins), dtype="float64"))
        out.loc[finite, "p_low"] = lows
        out.loc[finite, "p_high"] = highs
        out.loc[finite, "p_center"] = (lows + highs) / 2
        out.loc[finite, "p_order"] = index.astype("float64")
        groups, first = np.unique(index, return_index=True)  # each bin's label made once, not once a trial
        labels = np.array([f"{format_p(lows[i])}–{format_p(highs[i])}" for i in first], dtype=object)
        out.loc[finite, "p_bin"] = labels[np.searchsorted(groups, index)]
        out.loc[infinite, ["p_low", "p_high", "p_center", "p_order"]] = math.inf
    out.loc[infinite, "p_bin"] = INF_LABEL
    for column in ("p_center", "p_low", "p_high", "p_order"):
        out[column] = out[column].astype("float64")
    return out
