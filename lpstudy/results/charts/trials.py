"""The charts of the Home and Trials pages: the trials by state, the optimisation history, and one
trial's curves and dynamics."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.charts.look import DIVERGED_COLOUR, TEMPLATE, figure, mark_empty, mark_sample
from lpstudy.results.reading.point_sample import drawn_points, step_points


def states_chart(counts: pd.Series) -> go.Figure:
    fig = figure("Trials by state", "", "trials", height=300)
    colours = {"COMPLETE": "#2ca02c", "PRUNED": "#ff7f0e", "FAIL": DIVERGED_COLOUR, "RUNNING": "#1f77b4",
               "WAITING": "#9e9e9e"}
    fig.add_bar(x=list(counts.index), y=list(counts.values), marker_color=[colours.get(s, "#888") for s in counts.index],
                text=list(counts.values), textposition="outside", cliponaxis=False)
    return fig


def history_chart(trials: pd.DataFrame) -> go.Figure:
    """Each COMPLETE trial's final validation loss by trial number, and the best so far."""
    fig = figure("Optimisation history", "trial", "final validation loss")
    done = A.finished(trials).sort_values("number")
    ok = done[done["loss"].notna()]
    if ok.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    drawn = drawn_points(ok)  # a big study: a sample of the points; the best-so-far line stays exact
    fig.add_scatter(x=drawn.rows["number"], y=drawn.rows["loss"], mode="markers", name="trial",
                    marker={"size": 5, "opacity": 0.6, "color": "#1f77b4"})
    if ok["number"].nunique() <= 12:
        fig.update_xaxes(dtick=1)  # whole trial numbers, never 0.5
    x, best = step_points(ok["number"].to_numpy(), ok["loss"].cummin().to_numpy(dtype="float64"))
    fig.add_scatter(x=x, y=best, mode="lines", name="best so far", line={"color": "#d62728", "shape": "hv"})
    return mark_sample(fig, drawn.note) if drawn.note else fig


def trial_chart(curves: pd.DataFrame, number: int) -> go.Figure:
    """One trial's training and validation loss against step."""
    fig = figure(f"Trial {number}: loss curves", "step", "loss", height=380)
    rows = curves[curves["trial_number"] == number].sort_values("step")
    if rows.empty:
        return mark_empty(fig, "this trial has no evaluation yet")
    for column, name, colour in (("train_loss", "train", "#ff7f0e"), ("val_loss", "validation", "#1f77b4")):
        if rows[column].notna().any():
            fig.add_scatter(x=rows["step"], y=rows[column], mode="lines+markers", name=name,
                            line={"color": colour}, marker={"size": 4})
    return fig


def trial_dynamics_chart(curves: pd.DataFrame, number: int) -> go.Figure:
    """One trial's gradient norm, learning rate and attention gain against step."""
    from plotly.subplots import make_subplots

    rows = curves[curves["trial_number"] == number].sort_values("step")
    fig = make_subplots(rows=1, cols=3, subplot_titles=("gradient norm", "learning rate", "attention gain"),
                        horizontal_spacing=0.1)  # room for the tick labels of the panel on the right
    fig.update_layout(title={"text": f"Trial {number}: gradient, learning rate and gain", "x": 0.01},
                      template=TEMPLATE, height=340, showlegend=True, margin={"l": 60, "r": 20, "t": 80, "b": 90},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0, "xanchor": "left"})
    fig.update_xaxes(title_text="step")
    if rows.empty:
        return fig
    fig.add_scatter(x=rows["step"], y=rows["grad_norm"], mode="lines", name="gradient norm (mean per interval)",
                    line={"color": "#1f77b4"}, row=1, col=1)
    if rows["grad_norm_max"].notna().any():
        fig.add_scatter(x=rows["step"], y=rows["grad_norm_max"], mode="lines", name="gradient norm (largest)",
                        line={"dash": "dot", "color": "#d62728"}, row=1, col=1)
    fig.add_scatter(x=rows["step"], y=rows["lr"], mode="lines", name="learning rate", line={"color": "#2ca02c"},
                    row=1, col=2)
    fig.add_scatter(x=rows["step"], y=rows["gain_mean"], mode="lines", name="gain (mean over heads)",
                    line={"color": "#9467bd"}, row=1, col=3)
    if rows["gain_min"].notna().any():
        fig.add_scatter(x=[*rows["step"], *rows["step"][::-1]], y=[*rows["gain_max"], *rows["gain_min"][::-1]],
                        mode="lines", fill="toself", line={"width": 0}, fillcolor="rgba(148,103,189,0.2)",
                        hoverinfo="skip", name="gain (min–max over heads)", row=1, col=3)
    return fig
