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
from lpstudy.results.charts import caption, figure, mark_empty, p_axis

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
