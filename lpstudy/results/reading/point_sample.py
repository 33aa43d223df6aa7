"""Which trials a chart of one point per trial draws.

A browser does not draw 100,000 points quickly: at 100,000 trials the Home page's charts were 21 MB of
Plotly JSON and took 12 s to appear, the Effect of p page 25 s, though the server computed each in
about 2 s. Above CHART_POINTS trials, a chart of one point per trial draws a sample: the KEEP_BEST
trials with the lowest loss (where a reader looks) and the rest spread evenly in trial order. The
sample is deterministic (the same study draws the same points). What a chart computes from every
trial stays exact: the best-so-far lines (step_points keeps every point where the line moves, so the
drawn line is the exact one), a box's quartiles and whiskers (box_statistics), the means and counts
per p. The chart says so under its title (`note`, as results.analysis.curve_sample's curve samples do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

CHART_POINTS = 1500  # above this many trials, a chart of one point per trial draws a sample
KEEP_BEST = 200  # the trials with the lowest loss, always drawn


@dataclass(frozen=True)
class DrawnPoints:
    """The rows a chart draws, and the sentence it shows about them (None: every row)."""

    rows: pd.DataFrame
    note: str | None = None


def drawn_points(rows: pd.DataFrame, loss: str = "loss", limit: int | None = None) -> DrawnPoints:
    """rows (one per trial) as a chart draws them: all of them up to `limit` (CHART_POINTS), else
    the KEEP_BEST lowest `loss` and an even spread over the rest in trial-number order, `limit` in
    all, in the rows' order."""
    limit = CHART_POINTS if limit is None else limit
    if len(rows) <= limit:
        return DrawnPoints(rows)
    by_number = rows.sort_values("number", kind="stable")
    values = pd.to_numeric(by_number[loss], errors="coerce").to_numpy(dtype="float64") if loss in rows else None
    keep = np.zeros(len(by_number), dtype=bool)
    if values is not None and np.isfinite(values).any():
        finite = np.flatnonzero(np.isfinite(values))
        best = finite[np.argsort(values[finite], kind="stable")[:KEEP_BEST]]
        keep[best] = True
    rest = np.flatnonzero(~keep)
    picks = rest[np.unique(np.linspace(0, len(rest) - 1, limit - int(keep.sum())).round().astype(int))]
    keep[picks] = True
    drawn = rows[rows.index.isin(by_number.index[keep])]  # in the rows' own order
    note = (f"Points of a sample of {len(drawn):,} of {len(rows):,} trials: the {KEEP_BEST} lowest losses and an "
            "even spread in trial order. Lines, boxes and the numbers use every trial.")
    return DrawnPoints(drawn, note)


def step_points(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of a step line (Plotly's shape "hv") where it changes, and its last point: drawn,
    they make the same line as every point does. y may hold NaN before its first value."""
    if len(x) == 0:
        return x, y
    moved = np.ones(len(y), dtype=bool)
    same = (y[1:] == y[:-1]) | (np.isnan(y[1:]) & np.isnan(y[:-1]))
    moved[1:] = ~same
    moved[-1] = True
    return x[moved], y[moved]


def box_statistics(values: pd.Series) -> dict[str, float]:
    """A box of every value, for Plotly to draw without its points: the quartiles by linear
    interpolation (numpy's default) and whiskers to the furthest value within 1.5 IQR of the box,
    as Plotly's own boxes reach: q1, median, q3, lowerfence, upperfence."""
    y = values.to_numpy(dtype="float64")
    y = y[np.isfinite(y)]
    q1, median, q3 = np.percentile(y, [25, 50, 75])
    iqr = q3 - q1
    return {"q1": float(q1), "median": float(median), "q3": float(q3),
            "lowerfence": float(y[y >= q1 - 1.5 * iqr].min()), "upperfence": float(y[y <= q3 + 1.5 * iqr].max())}
