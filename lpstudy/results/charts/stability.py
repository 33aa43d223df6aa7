"""The charts of the Stability page (the lens's own are in lens): the divergence rate per p group and
over a grid, the largest gradient norm, the attention gain's curves, and a search's spread of runs
per p group."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.charts.convergence import median_curves
from lpstudy.results.charts.look import (DIVERGED_COLOUR, JOIN_RUNS, caption, draws_bands, figure, heatmap, log_ticks,
                                         mark_empty, mark_sample, p_axis)
from lpstudy.results.reading.point_sample import CHART_POINTS, box_statistics


def divergence_map(cells: pd.DataFrame, by: str = "lr") -> go.Figure:
    """Share of diverged runs per cell of p × learning rate (or p × fold for a grid)."""
    return heatmap(cells, "divergence_rate", "Divergence rate", "diverged", "Reds", by, 0, 1)


def divergence_rate_chart(rates: pd.DataFrame) -> go.Figure:
    per_configuration = "n_configurations" in rates and bool((rates["n_configurations"] != rates["n"]).any())
    counted = (f": {int(rates['n_configurations'].sum())} configurations of {int(rates['n'].sum())} runs, "
               "each counted once" if per_configuration else "")
    fig = figure(f"Divergence rate per p (95 % Wilson interval{counted})", "p",
                 "diverged share per configuration" if per_configuration else "diverged runs")
    if rates.empty:
        return mark_empty(fig, "no completed trial yet")
    # the rate itself as a point, its Wilson interval as bars around it
    fig.add_scatter(x=list(rates["p_bin"]), y=rates["rate"], mode="markers", name="rate (95 % Wilson interval)",
                    marker={"size": 9, "color": DIVERGED_COLOUR, "symbol": "diamond"},
                    error_y={"type": "data", "array": (rates["ci_high"] - rates["rate"]).fillna(0),
                             "arrayminus": (rates["rate"] - rates["ci_low"]).fillna(0), "visible": True,
                             "color": DIVERGED_COLOUR},
                    customdata=np.column_stack([rates["n_diverged"], rates["n"],
                                                rates["n_configurations"] if per_configuration else rates["n"]]),
                    hovertemplate="p %{x}<br>%{customdata[0]} of %{customdata[1]} runs diverged"
                                  + ("<br>%{customdata[2]} configurations, each once" if per_configuration else "")
                                  + "<extra></extra>")
    fig.update_xaxes(type="category")
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    return fig


def max_grad_norm_chart(grads: pd.DataFrame) -> go.Figure:
    fig = figure("Largest gradient norm against p", "p", "largest gradient norm (log)")
    if grads.empty:
        return mark_empty(fig, "no gradient norms recorded yet")
    x = A.p_positions(grads["p"].astype("float64"))
    diverged = grads["diverged"].astype(bool)
    for mask, name, marker in ((~diverged, "ran through", {"color": "#1f77b4", "size": 6, "opacity": 0.7}),
                               (diverged, "diverged", {"color": DIVERGED_COLOUR, "symbol": "x", "size": 8})):
        if mask.any():
            fig.add_scatter(x=x[mask], y=grads.loc[mask, "max_grad_norm"], mode="markers", name=name, marker=marker,
                            customdata=grads.loc[mask, "trial_number"],
                            hovertemplate="trial %{customdata}<br>%{y:.3g}<extra></extra>")
    log_ticks(fig, grads["max_grad_norm"])
    p_axis(fig, grads["p"])
    return fig


def gain_chart(bands: "A.CurveBands | pd.DataFrame") -> go.Figure:
    fig = median_curves(bands, "attention gain")
    band_text = ", 25–75 % band" if draws_bands(bands) else ""
    fig.update_layout(title={"text": f"Attention gain over training, per p (median{band_text})"})
    return fig


def spread_chart(trials: pd.DataFrame, bins: int | Sequence[float] | None = None,
                 configurations: Sequence[str] = ()) -> go.Figure:
    """The final validation losses of each p group as a box: the spread across what varies between
    its runs (folds, seeds; in a search, the runs' other fields), named in the title. With
    `configurations` (a search's searched fields: answers.mixed_groups.search_fields), each
    configuration is one point, its loss read on the average fold (analysis.configurations), and the
    title says how many configurations and runs."""
    ok = A.successful(trials)
    ok = ok[ok["p"].notna()]
    n_runs = len(ok)
    if configurations and len(ok):
        from lpstudy.results.analysis.configurations import per_configuration

        one = per_configuration(ok, configurations)
        ok = ok.loc[one.index].assign(loss=one["loss"])
    varies = [name for column, name in (("fold", "folds"), ("seed", "seeds")) if column in ok and ok[column].nunique() > 1]
    across = (f"configurations ({len(ok)} configurations of {n_runs} runs, each counted once)" if configurations
              else " and ".join(varies) or "runs")
    fig = figure(f"Spread of final validation loss across {across}, per p", "p", "final validation loss")
    if ok.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    groups = ok.join(A.p_bins(ok["p"], bins)).sort_values("p_order")
    order = groups["p_bin"].drop_duplicates().tolist()
    few = groups.groupby("p_bin")["loss"].transform("size") < JOIN_RUNS
    if len(groups) <= CHART_POINTS and few.all():  # groups of one or two: their points, no box to read a spread into
        fig.add_scatter(x=groups["p_bin"], y=groups["loss"], mode="markers", showlegend=False,
                        marker={"size": 7, "color": "#1f77b4"},
                        customdata=np.column_stack([groups["number"], groups["fold"]]),
                        hovertemplate="trial %{customdata[0]} (fold %{customdata[1]})<br>%{y:.4f}<extra></extra>")
        caption(fig, f"Every group holds fewer than {JOIN_RUNS} runs: their losses, without boxes.")
    elif len(groups) <= CHART_POINTS:
        fig.add_box(x=groups["p_bin"], y=groups["loss"], boxpoints="all", jitter=0.4, pointpos=0,
                    marker={"size": 4, "color": "#1f77b4"}, line={"color": "#1f77b4"}, showlegend=False,
                    customdata=np.column_stack([groups["number"], groups["fold"]]),
                    hovertemplate="trial %{customdata[0]} (fold %{customdata[1]})<br>%{y:.4f}<extra></extra>")
    else:  # a big study: each box from every trial's loss, computed here; no points
        stats = [box_statistics(groups.loc[groups["p_bin"] == label, "loss"]) for label in order]
        fig.add_box(x=order, **{k: [s[k] for s in stats] for k in stats[0]}, boxpoints=False,
                    line={"color": "#1f77b4"}, showlegend=False)
        fig = mark_sample(fig, f"Boxes of all {len(groups):,} trials, without their points")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    return fig
