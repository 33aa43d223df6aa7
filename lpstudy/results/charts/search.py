"""The charts of what a search says about p (lpstudy.results.answers.search): p's surrogate profile
and partial dependence with their bands. Plotly figures, shared by the Effect of p page and
`lpstudy report`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.answers.answer_types import ProfilePoint, SearchAnswer
from lpstudy.results.charts.look import caption, figure, mark_empty, p_axis

TITLE = "p's effect with lr and gain held apart (surrogate, 95 % band)"
PROFILE_COLOUR = "#2ca02c"
DEPENDENCE_COLOUR = "#1f77b4"


def _frame(rows: list[ProfilePoint]) -> pd.DataFrame:
    frame = pd.DataFrame([row.to_json() for row in rows], columns=["p", "loss", "low", "high"])
    frame["p"] = frame["p"].map(lambda v: math.inf if v == "inf" else float(v))
    return frame.astype("float64")


def _band(fig: go.Figure, x, rows: pd.DataFrame, colour: str, name: str, dash: str | None = None) -> None:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    finite = np.isfinite(rows["p"].to_numpy())
    xs, lows, highs = np.asarray(x)[finite], rows["low"].to_numpy()[finite], rows["high"].to_numpy()[finite]
    fig.add_scatter(x=[*xs, *xs[::-1]], y=[*highs, *lows[::-1]], mode="lines", fill="toself",
                    fillcolor=f"rgba({r},{g},{b},0.15)", line={"width": 0}, hoverinfo="skip", showlegend=False,
                    legendgroup=name)
    fig.add_scatter(x=xs, y=rows["loss"].to_numpy()[finite], mode="lines", name=name, legendgroup=name,
                    line={"color": colour, "width": 2, **({"dash": dash} if dash else {})},
                    customdata=np.column_stack([lows, highs]),
                    hovertemplate="p %{x:.2f}<br>%{y:.4f} (95 %: %{customdata[0]:.4f}–%{customdata[1]:.4f})"
                                  "<extra>" + name + "</extra>")
    if (~finite).any():  # ∞: a point of its own with its interval, never joined to the finite curve
        at = rows[~finite].iloc[0]
        fig.add_scatter(x=[np.asarray(x)[~finite][0]], y=[at["loss"]], mode="markers", showlegend=False,
                        legendgroup=name, marker={"color": colour, "size": 9},
                        error_y={"type": "data", "array": [at["high"] - at["loss"]],
                                 "arrayminus": [at["loss"] - at["low"]], "visible": True},
                        hovertemplate="p ∞<br>%{y:.4f}<extra>" + name + "</extra>")


def surrogate_profile_chart(answer: SearchAnswer) -> go.Figure:
    """p's profile (the best loss each p reaches with the other fields tuned for it) and its partial
    dependence, from the answer's surrogate, with their 95 % bands; the answer's sentence where
    there is no surrogate."""
    fig = figure(TITLE, "p", "final validation loss")
    if not answer.p_profile:
        from lpstudy.results.answers.surrogate import MIN_RUNS

        runs = (answer.n_finite_runs if answer.n_finite_runs is not None else answer.n_runs) or 0  # the sentence's count: runs at finite p
        return mark_empty(fig, f"the surrogate needs {MIN_RUNS} completed runs at finite p; this study has "
                               f"{runs} (see the sentence above)")
    profile, dependence = _frame(answer.p_profile), _frame(answer.p_partial_dependence)
    x = A.p_positions(profile["p"])
    _band(fig, x, dependence, DEPENDENCE_COLOUR, "averaged over lr, gain", dash="dash")
    _band(fig, x, profile, PROFILE_COLOUR, "lr, gain tuned")
    p_axis(fig, profile["p"])
    shown = pd.concat([profile, dependence])
    low, high = float(shown["low"].min()), float(shown["high"].max())
    pad = 0.08 * ((high - low) or 0.05)
    fig.update_yaxes(range=[low - pad, high + pad])
    tangled = answer.entanglement
    words = ", ".join(f"{name} {rho:+.2f}" for name, rho in tangled.items())
    effect = answer.effect
    text = ("A Gaussian-process surrogate of the final loss over the searched fields: solid, its minimum over the "
            "lr and gain settings the search ran (p's profile: what p reaches with them tuned); dashed, its average "
            "over them (partial dependence); 95 % bands that hold the whole curve, from a parametric bootstrap over "
            "draws of the surrogate's hyperparameters; ∞ fitted apart.")
    configurations = effect.n_configurations or effect.n_runs if effect else 0
    if effect and effect.n_fit and effect.n_fit < configurations:
        text += f" Fitted on a sample of {effect.n_fit:,} configurations."
    if effect and effect.n_configurations:
        text += (f" {effect.n_configurations:,} configurations of {effect.n_runs:,} runs: a configuration run on "
                 "several folds is one point, its folds averaged with the fold as a factor.")
    if words:
        text += f" p's rank correlation among the runs: {words}."
    return caption(fig, text)


__all__ = ["TITLE", "surrogate_profile_chart"]


SPACE_FIELDS = (("lr", "learning rate", True), ("gain_init", "gain₀", False))  # (column, label, log scale)


def _searched_runs(trials: pd.DataFrame) -> pd.DataFrame:
    """A search's completed runs that did not diverge, with p's drawn position (∞ placed past the rest)."""
    runs = A.successful(trials)
    runs = runs[runs["p"].notna()]
    return runs.assign(p_x=A.p_positions(runs["p"].astype("float64")))


def parallel_coordinates(trials: pd.DataFrame) -> go.Figure:
    """A search's space as optuna-dashboard and W&B draw it: one line per completed run across p, the
    learning rate (log10), the gain and its final loss, coloured by p."""
    fig = figure("Search space: each run across p, lr, gain₀ and its loss (colour: p)", height=440)
    runs = _searched_runs(trials)
    if len(runs) < 2:
        return mark_empty(fig, "needs two completed runs that did not diverge")
    ticks = A.p_ticks(runs["p"].astype("float64"))
    p_dim = {"label": "p", "values": runs["p_x"]}
    if ticks is not None:
        p_dim.update(tickvals=ticks[0], ticktext=ticks[1])
    dims = [p_dim]
    for column, label, log in SPACE_FIELDS:
        if column in runs and runs[column].nunique() > 1:
            values = np.log10(runs[column].astype("float64")) if log else runs[column].astype("float64")
            dims.append({"label": f"log10 {label}" if log else label, "values": values})
    dims.append({"label": "final loss", "values": runs["loss"]})
    fig.add_trace(go.Parcoords(dimensions=dims, line={"color": runs["p_x"], "colorscale": "Viridis",
                                                      "showscale": True, "colorbar": {"title": "p"}}))
    fig.update_layout(margin={"l": 60, "r": 60, "t": 90, "b": 40})
    return caption(fig, f"{len(runs)} completed runs that did not diverge; drag along an axis to pick a range.")


def slice_plot(trials: pd.DataFrame) -> go.Figure:
    """The final loss against each searched field, one panel a field, every run a point coloured by p
    (Optuna's slice plot)."""
    from plotly.subplots import make_subplots

    runs = _searched_runs(trials)
    fields = [("p_x", "p", False)] + [f for f in SPACE_FIELDS if f[0] in runs and runs[f[0]].nunique() > 1]
    title = "Slice: the final loss against each searched field (colour: p)"
    if len(runs) < 2:
        return mark_empty(figure(title), "needs two completed runs that did not diverge")
    fig = make_subplots(rows=1, cols=len(fields), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[label for _, label, _ in fields])
    for i, (column, label, log) in enumerate(fields, start=1):
        fig.add_scatter(x=runs[column], y=runs["loss"], mode="markers", showlegend=False, row=1, col=i,
                        marker={"color": runs["p_x"], "colorscale": "Viridis", "size": 6, "opacity": 0.8,
                                "showscale": i == len(fields), "colorbar": {"title": "p"}},
                        customdata=runs[["number"]], hovertemplate=f"trial %{{customdata[0]}}<br>{label} %{{x:.3g}}"
                                                                   "<br>loss %{y:.4f}<extra></extra>")
        if log:
            fig.update_xaxes(type="log", row=1, col=i)
    p_axis(fig, runs["p"], {"row": 1, "col": 1})
    fig.update_yaxes(title_text="final validation loss", row=1, col=1)
    fig.update_layout(title={"text": title, "x": 0.01, "xanchor": "left"}, template=figure("").layout.template,
                      height=400, margin={"l": 60, "r": 20, "t": 80, "b": 50})
    return caption(fig, f"{len(runs)} completed runs that did not diverge. Each panel mixes the other fields' values: "
                        "a search's runs drew them together.")
