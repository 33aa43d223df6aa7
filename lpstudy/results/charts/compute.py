"""The dashboard's charts of compute (results.reading.compute): the best value so far against the compute
spent by all trials, and pruned trials marked on the loss curves at the step where they stopped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results.charts.look import figure, mark_empty, mark_sample
from lpstudy.results.reading.point_sample import drawn_points, step_points

PRUNED_MARKER = {"symbol": "x", "size": 7, "color": "#444444", "line": {"width": 1}}


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds >= 2 * 3600:
        return 3600.0, "hours"
    if seconds >= 2 * 60:
        return 60.0, "minutes"
    return 1.0, "seconds"


def best_against_compute_chart(frame: pd.DataFrame) -> go.Figure:
    """The best value so far (a step line) against the device time spent by every finished trial,
    each trial a point at the compute spent when it finished (pruned ones marked ×)."""
    fig = figure("Best value so far against compute spent", "compute spent", "validation loss")
    if frame.empty:
        return mark_empty(fig, "no trial has finished yet")
    scale, unit = _time_unit(float(frame["cumulative_s"].iloc[-1]))
    x = frame["cumulative_s"].to_numpy(dtype="float64") / scale
    fig.update_xaxes(title_text=f"compute spent by all trials ({unit} of device time)")
    steps = frame["cumulative_steps"].to_numpy(dtype="float64")
    drawn = drawn_points(frame.assign(loss=frame["value"].where(frame["candidate"].astype(bool))))
    shown = frame.index.isin(drawn.rows.index)  # a big study: a sample of the points; the line stays exact
    best = frame["best_value"].to_numpy(dtype="float64")
    changes = step_points(np.arange(len(best)), best)[0]  # where the best-so-far line moves, and its end
    text = np.full(len(frame), None, dtype=object)  # hover text for the drawn points only (not 100,000 of them)
    for i in np.union1d(np.flatnonzero(shown), changes):
        text[i] = f"trial {frame['number'].iat[i]} ({frame['state'].iat[i].lower()})<br>{int(steps[i]):,} steps in all"
    for state, symbol, colour in (("COMPLETE", "circle", "#1f77b4"), ("PRUNED", "x", "#7f7f7f")):
        mask = (frame["state"] == state).to_numpy() & np.isfinite(frame["value"].to_numpy(dtype="float64")) & shown
        if mask.any():
            fig.add_scatter(x=x[mask], y=frame["value"].to_numpy()[mask], mode="markers", name=state.lower(),
                            marker={"symbol": symbol, "size": 6, "color": colour, "opacity": 0.6},
                            text=text[mask], hovertemplate="%{text}<br>value %{y:.4f}<extra></extra>")
    if np.isfinite(best).any():
        fig.add_scatter(x=x[changes], y=best[changes], mode="lines", line={"shape": "hv", "width": 2.5, "color": "#d62728"},
                        name="best so far", text=text[changes], hovertemplate="%{text}<br>best %{y:.4f}<extra></extra>")
        # diverged runs (ln V) leave through the top instead of squashing the rest; every other trial,
        # the worst included, stays on the axis
        ranged = frame.loc[frame["candidate"].astype(bool) | (frame["state"] == "PRUNED"), "value"]
        ranged = ranged[np.isfinite(ranged.to_numpy(dtype="float64"))]
        bottom = float(np.nanmin(best))
        top = max(float(np.nanmax(best)), float(ranged.max()) if len(ranged) else -np.inf)
        pad = 0.05 * ((top - bottom) or 1.0)
        fig.update_yaxes(range=[bottom - pad, top + pad])
    return mark_sample(fig, drawn.note) if drawn.note else fig


def mark_pruned(fig: go.Figure, stops: pd.DataFrame, column: str = "val_loss") -> go.Figure:
    """Add a × where each pruned trial's curve stopped (results.reading.compute.pruned_stops)."""
    if stops.empty:
        return fig
    fig.add_scatter(x=stops["step"], y=stops[column], mode="markers", marker=PRUNED_MARKER,
                    name=f"pruned ({len(stops)})", showlegend=True,
                    text=[f"trial {int(n)} pruned" for n in stops["trial_number"]],
                    hovertemplate="%{text} at step %{x}<br>loss %{y:.4f}<extra></extra>")
    return fig
