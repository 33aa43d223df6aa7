"""p as the charts group it: labels, axis positions (∞ right of the largest finite p) and bins."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

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
    """None (the exact values) where they fit on an axis (exact_p_fit), else a number of equal-width
    bins: DEFAULT_P_BINS, fewer for a few values (about √n + 1, so that bins hold more than one)."""
    if exact_p_fit(p):
        return None
    distinct = int(np.isfinite(np.unique(p.dropna().to_numpy(dtype="float64"))).sum())
    return int(max(2, min(DEFAULT_P_BINS, round(math.sqrt(distinct)) + 1)))


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
