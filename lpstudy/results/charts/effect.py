"""The charts of the Effect of p page (the verdicts' own are in verdicts, a search's profile in
search): the final loss against p, the mean loss per p group with its interval, the tuned profile of
p (the expected best of m per group), the loss over a grid, and the parameters' importance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.charts.look import (DIVERGED_COLOUR, caption, figure, fit_axis, heatmap, joined, lr_colour,
                                         mark_empty, mark_sample, p_axis, p_group_axis, p_text)
from lpstudy.results.reading.point_sample import drawn_points


def loss_vs_p(trials: pd.DataFrame) -> go.Figure:
    """Final validation loss against p, coloured by learning rate; diverged runs as red × along
    the top edge."""
    fig = figure("Final validation loss against p", "p", "final validation loss")
    done = A.finished(trials)
    done = done[done["p"].notna()]
    if done.empty:
        return mark_empty(fig, "no completed trial yet")
    every, drawn = done, drawn_points(done)  # a big study: a sample of the points (the lowest losses always)
    done = drawn.rows
    x = A.p_positions(done["p"]).to_numpy()
    ok = done["loss"].notna().to_numpy()
    # numbers in customdata, p's label as text: a float array serialises far faster than mixed objects
    custom = done[["number", "lr", "gain_init"]].to_numpy(dtype="float64")
    text = np.array(p_text(done["p"]), dtype=object)
    details = "<br>p %{text}<br>lr %{customdata[1]:.3g}<br>gain₀ %{customdata[2]:.3g}"
    if ok.any():
        colour = lr_colour(done.loc[ok, "lr"])
        fig.add_scatter(x=x[ok], y=done["loss"].to_numpy()[ok], mode="markers", name="completed",
                        marker={"size": 7, "opacity": 0.8, **colour}, customdata=custom[ok], text=text[ok],
                        hovertemplate="trial %{customdata[0]}" + details + "<br>loss %{y:.4f}<extra></extra>")
    if (~ok).any():
        losses = every["loss"].dropna()
        top = float(losses.max()) if len(losses) else 1.0
        span = float(losses.max() - losses.min()) if len(losses) > 1 else 0.1
        fig.add_scatter(x=x[~ok], y=np.full(int((~ok).sum()), top + 0.08 * max(span, 0.05)), mode="markers",
                        name="diverged", marker={"symbol": "x", "size": 8, "color": DIVERGED_COLOUR},
                        customdata=custom[~ok], text=text[~ok],
                        hovertemplate="trial %{customdata[0]} diverged" + details + "<extra></extra>")
    p_axis(fig, every["p"])
    return mark_sample(fig, drawn.note) if drawn.note else fig


def mean_loss_per_p(summary: pd.DataFrame) -> go.Figure:
    """Mean final validation loss per p group with its 95 % t interval from 3 runs up (two runs
    give an interval 12.7 standard errors wide, which says nothing and squashes the rest)."""
    fig = figure("Mean final validation loss per p (95 % interval)", "p", "final validation loss")
    rows = summary[summary["n_ok"] > 0]
    if rows.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    x = A.p_positions(rows["p"].astype("float64"))
    drawn = rows["n_ok"] >= 3
    upper = (rows["ci_high"] - rows["mean"]).where(drawn).fillna(0)
    lower = (rows["mean"] - rows["ci_low"]).where(drawn).fillna(0)
    fig.add_scatter(x=x, y=rows["mean"], mode=joined(rows["n_ok"]) + "+text", name="mean (95 % interval)",
                    marker={"size": 8, "color": "#1f77b4"}, line={"color": "#1f77b4"},
                    text=[f"n = {int(n)}" if n < 3 else "" for n in rows["n_ok"]],
                    # left of the rightmost point (∞, or the largest p), where the right edge would cut it
                    textposition=["middle left" if xi >= float(np.max(x)) else "middle right" for xi in x],
                    textfont={"size": 10, "color": "#555"},
                    error_y={"type": "data", "array": upper, "arrayminus": lower, "visible": True},
                    customdata=np.column_stack([rows["p_bin"], rows["n_ok"], rows["std"].fillna(0)]),
                    hovertemplate="p %{customdata[0]}<br>mean %{y:.4f} ± %{customdata[2]:.4f} (sd)"
                                  "<br>n %{customdata[1]}<extra></extra>")
    fit_axis(fig, float((rows["mean"] - lower).min()), float((rows["mean"] + upper).max()))
    p_group_axis(fig, rows, x)
    if not drawn.all():
        caption(fig, "Intervals are drawn from 3 runs up; n under a point says how few it holds.")
    return fig


def tuned_profile_chart(profile: pd.DataFrame) -> go.Figure:
    """p's tuned profile per p group (analysis.tuned_profile): the expected best of m runs (m the
    smallest group's runs; Dodge et al. 2019) with its interval, and the lowest loss found."""
    fig = figure("Tuned profile: expected best of m runs per p", "p", "final validation loss")
    if profile.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    x = A.p_positions(profile["p"].astype("float64"))
    m = profile["m"].iloc[0]
    alone = profile["expected_best"].isna()  # a group of one: its best found, no best of m to compare
    custom = np.column_stack([profile["p_bin"], profile["n"], profile["best_trial"], profile["best"]])
    fig.add_scatter(x=x, y=profile["best"], mode="markers", name="best found (a best of n)",
                    marker={"size": 8, "color": "#999", "symbol": "circle-open"}, customdata=custom,
                    hovertemplate="p %{customdata[0]}<br>best %{y:.4f} (trial %{customdata[2]})"
                                  "<br>of %{customdata[1]} runs<extra></extra>")
    drawn = profile["expected_low"].notna()
    if alone.all():
        p_group_axis(fig, profile, x)
        return caption(fig, "Every p group holds one completed run that did not diverge: its loss, hollow; an expected "
                            "best of m needs two runs in a group.")
    m = int(m)
    fig.add_scatter(x=x, y=profile["expected_best"], mode=joined(profile["n"]) + "+text",
                    name=f"expected best of {m} runs",
                    line={"color": "#2ca02c"}, marker={"size": 9, "color": "#2ca02c"},
                    text=[f"n = {n}" if n < 3 else "" for n in profile["n"]], textposition="top center",
                    textfont={"size": 10, "color": "#555"}, customdata=custom,
                    error_y={"type": "data", "visible": True,
                             "array": (profile["expected_high"] - profile["expected_best"]).where(drawn, 0),
                             "arrayminus": (profile["expected_best"] - profile["expected_low"]).where(drawn, 0)},
                    hovertemplate="p %{customdata[0]}<br>expected best %{y:.4f}<br>of the group's %{customdata[1]} runs"
                                  "<extra></extra>")
    shown = pd.concat([profile["best"], profile["expected_best"], profile["expected_low"].dropna(),
                       profile["expected_high"].dropna()])
    fit_axis(fig, float(shown.min()), float(shown.max()))
    p_group_axis(fig, profile, x)
    ones = profile.loc[alone, "p_bin"].tolist()
    single = f" p {', '.join(map(str, ones))}: one run, its loss alone." if ones else ""
    return caption(fig, f"Per p group, its completed runs that did not diverge: the expected lowest loss of {m} "
                        "of them (m: the smallest group's runs, so every group is compared at the same number of "
                        "tries; 95 % bootstrap interval from 3 runs up; each group's runs in the hover) and, hollow, the lowest found, which falls "
                        "with a group's runs alone. p's effect with lr and the gain held apart is the surrogate's "
                        "chart." + single)


def loss_map(cells: pd.DataFrame, by: str = "lr") -> go.Figure:
    """Mean final validation loss per cell of p × learning rate (or p × fold for a grid)."""
    return heatmap(cells, "mean_loss", "Validation loss", "loss", "Viridis_r", by)


def importance_chart(importance: "A.Importance") -> go.Figure:
    """Each ranked field's share of the final loss's variation beyond the others (analysis.importance)
    with its 95 % bootstrap interval and the line shuffled losses reach; no bars where the runs are
    too few (the chart says why in its middle), the caption saying what was ranked and left out."""
    from lpstudy.results.analysis.importance import TITLE

    fig = figure(TITLE, "share of the final loss's variation", "", height=300)
    if importance.empty:
        return caption(mark_empty(fig, importance.reason or "nothing to rank"), importance.caption())
    ordered = importance.shares.sort_values()
    low, high = importance.low.reindex(ordered.index), importance.high.reindex(ordered.index)
    fig.add_bar(x=ordered.values, y=list(ordered.index), orientation="h", marker_color="#1f77b4",
                text=[f"{v:.0%}" for v in ordered.values], textposition="inside", insidetextanchor="start",
                textfont={"color": "white"}, name="share",
                error_x={"type": "data", "array": (high - ordered).clip(lower=0).fillna(0).to_numpy(),
                         "arrayminus": (ordered - low).clip(lower=0).fillna(0).to_numpy(), "visible": True})
    top = max(float(high.max()) if high.notna().any() else 0.0, float(ordered.max()), importance.null or 0.0)
    if importance.null is not None:
        fig.add_vline(x=importance.null, line={"dash": "dash", "color": "#888"})
    fig.update_xaxes(range=[0, min(1.0, top * 1.25 + 0.02)], tickformat=".0%")
    fig.update_yaxes(ticksuffix="  ", automargin=True)  # the names a little apart from their bars
    fig.update_layout(showlegend=False)
    return caption(fig, importance.caption())
