"""The stability lens as Plotly figures (one function per figure, like lpstudy.results.charts, whose
helpers they share): final loss against the learning rate per p, LR sensitivity per p, the largest
attention logit and the smallest head entropy over training, the initial entropy per p for each
gain rule, and a comparison's paired table. Their numbers come from lpstudy.results.analysis."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.charts.convergence import median_curves
from lpstudy.results.charts.look import caption, draws_bands, figure, group_colours, log_ticks, mark_empty, p_axis, tick_text

RULE_COLOURS = {"default": "#1f77b4", "fixed": "#1f77b4", "matched": "#ff7f0e"}
RULE_NAMES = {"default": "fixed gain g₀ = log₂(L²−L)", "fixed": "fixed gain", "matched": "matched gain",
              "sampled": "sampled gain"}
LR_DODGE_DECADES = 0.02  # how far apart (log10 of the learning rate) the p values are drawn at one learning rate


MIN_INTERVAL_RUNS = 3  # an interval over fewer runs is not drawn (two give one 12.7 standard errors wide)


def _error(frame: pd.DataFrame, centre: str = "mean", n: str | None = None) -> dict:
    """Error bars of the ci_low/ci_high columns; with `n`, only where that column counts 3 runs or more."""
    drawn = frame[n] >= MIN_INTERVAL_RUNS if n else pd.Series(True, index=frame.index)
    return {"type": "data", "array": (frame["ci_high"] - frame[centre]).where(drawn).fillna(0),
            "arrayminus": (frame[centre] - frame["ci_low"]).where(drawn).fillna(0), "visible": True}


def lr_curve_chart(curve: pd.DataFrame) -> go.Figure:
    """Final validation loss (capped at the initial loss) against the learning rate, one line per p."""
    intervals = not curve.empty and bool((curve["n"] >= MIN_INTERVAL_RUNS).any())  # the title names only what is drawn
    fig = figure("Final loss against learning rate per p" + (" (95 % interval)" if intervals else ""), "learning rate",
                  "final validation loss (diverged = initial loss)")
    fig.update_xaxes(type="log")
    if curve.empty:
        return mark_empty(fig, "no completed run yet")
    if not intervals:
        caption(fig, f"One point per p and learning rate; no interval where fewer than {MIN_INTERVAL_RUNS} runs share one.")
    lrs = sorted(float(lr) for lr in curve["lr"].dropna().unique() if lr > 0)
    if len(lrs) == 1:  # a grid at one learning rate: its tick, on an axis around it (1-2-5 ticks may all miss it)
        fig.update_xaxes(tickvals=lrs, ticktext=[tick_text(lrs[0])], range=[np.log10(lrs[0]) - 0.3, np.log10(lrs[0]) + 0.3])
    else:
        log_ticks(fig, curve["lr"], axis="x")
    position = A.p_positions(curve.groupby("p_bin", sort=False)["p"].first())
    order = sorted(position.index, key=lambda label: float(position[label]))
    colours = dict(zip(order, group_colours(len(order), [float(position[label]) for label in order])))
    # Each p drawn a little to the side of the learning rate it ran at (a dodge, in decades), so that
    # several p at one learning rate stand side by side instead of on top of each other.
    dodge = {label: (i - (len(order) - 1) / 2) * LR_DODGE_DECADES for i, label in enumerate(order)}
    for label, group in curve.groupby("p_bin", sort=False):
        group = group.sort_values("lr")
        mode = "lines+markers" if int(group["n"].min()) >= MIN_INTERVAL_RUNS else "markers"  # no line through noise
        fig.add_scatter(x=group["lr"] * 10 ** dodge[label], y=group["mean"], mode=mode, name=f"p {label}",
                        line={"color": colours[label]}, error_y=_error(group, n="n"),
                        customdata=np.column_stack([group["n"], group["n_diverged"], group["lr"]]),
                        hovertemplate=f"p {label}<br>lr %{{customdata[2]:.3g}}<br>loss %{{y:.4f}}<br>runs %{{customdata[0]}}"
                                      " (diverged %{customdata[1]})<extra></extra>")
    fig.update_layout(legend={"orientation": "v", "y": 1, "x": 1.02, "xanchor": "left", "yanchor": "top"})
    low, high = float(curve["mean"].min()), float(curve["mean"].max())
    pad = 0.15 * (high - low) + 0.05
    fig.update_yaxes(range=[max(0.0, low - pad), high + pad])  # the means fit; an interval past them is cut
    return fig


def lr_sensitivity_chart(sensitivity: pd.DataFrame) -> go.Figure:
    """LR sensitivity per p with its interval across folds (Wortsman et al. 2023)."""
    fig = figure("LR sensitivity per p (Wortsman et al. 2023; 95 % CI)", "p",
                  "E_lr[min(loss, L0)] − min_lr loss (nats)")
    if sensitivity.empty:
        return mark_empty(fig, "needs a sweep of at least two learning rates per p (lpstudy replicate --lr A,B,C)")
    x = A.p_positions(sensitivity["p"].astype("float64"))
    fig.add_scatter(x=x, y=sensitivity["mean"], mode="markers", name="LR sensitivity", marker={"size": 10},
                    error_y=_error(sensitivity),
                    customdata=np.column_stack([sensitivity["p_bin"], sensitivity["n_folds"], sensitivity["n_lrs"],
                                                sensitivity["best_lr"]]),
                    hovertemplate="p %{customdata[0]}<br>sensitivity %{y:.4f}<br>folds %{customdata[1]} · "
                                  "lrs %{customdata[2]} · best lr %{customdata[3]:.3g}<extra></extra>")
    fig.update_xaxes(tickvals=list(x), ticktext=list(sensitivity["p_bin"]))
    return fig


def _median_chart(bands: "A.CurveBands | pd.DataFrame", what: str, axis_title: str) -> go.Figure:
    """median_curves' lines (bands only where few groups leave them readable), titled for `what`."""
    fig = median_curves(bands, axis_title)
    band = " (median, 25–75 % band)" if draws_bands(bands) else " (median)"
    fig.update_layout(title={"text": f"{what} per p{band}"})
    return fig


def max_logit_chart(bands: "A.CurveBands | pd.DataFrame") -> go.Figure:
    return _median_chart(bands, "Largest attention logit", "largest attention logit")


def min_head_entropy_chart(bands: "A.CurveBands | pd.DataFrame") -> go.Figure:
    return _median_chart(bands, "Smallest head entropy", "smallest head entropy (nats)")


RULE_SYMBOLS = {"default": "circle", "fixed": "circle", "matched": "diamond"}
RULE_KINDS = {"default": "fixed", "fixed": "fixed", "matched": "matched", "sampled": "sampled"}  # a title's words
ENTROPY_MIN_SPAN = 0.5  # nats: the least the entropy axis spans, so that a spread of 0.01 looks flat


def initial_entropy_chart(table: pd.DataFrame) -> go.Figure:
    """The attention entropy before the first update against p: points, one trace per gain rule
    (named in the legend, even when there is one), never a line (a search's runs at nearby p are
    separate runs, not a curve). Ticks at the exact p values where they fit on the axis
    (analysis.exact_p_fit), else evenly spaced ones; ∞ at its drawn place."""
    rules = sorted({RULE_KINDS.get(rule, rule) for rule in table["gain_rule"]}) if len(table) else []
    gains = " and ".join(rules) + " gains" if rules else "by gain rule"  # what it draws: the rules its runs started from
    fig = figure(f"Attention entropy at initialisation against p, {gains}", "p",
                  "mean attention entropy at step 0 (nats)")
    if table.empty:
        return mark_empty(fig, "no evaluation at step 0 recorded")
    p = table["p"].astype("float64")
    x_all = A.p_positions(p)
    for rule, group in table.groupby("gain_rule", sort=True):
        fig.add_scatter(x=x_all[group.index], y=group["entropy"], mode="markers", showlegend=True,
                        name=RULE_NAMES.get(rule, rule),
                        marker={"color": RULE_COLOURS.get(rule, "#2ca02c"), "size": 8, "opacity": 0.8,
                                "symbol": RULE_SYMBOLS.get(rule, "square")},
                        customdata=np.column_stack([group["p_bin"], group["gain_init"], group["n"]]),
                        hovertemplate="p %{customdata[0]}<br>entropy %{y:.3f}<br>gain₀ %{customdata[1]:.3g}"
                                      "<br>runs %{customdata[2]}<extra></extra>")
    fig.update_layout(showlegend=True)
    low, high = float(table["entropy"].min()), float(table["entropy"].max())
    if high - low < ENTROPY_MIN_SPAN:  # nearly equal everywhere: a flat line on a honest axis, and the spread said
        middle = (low + high) / 2
        fig.update_yaxes(range=[middle - ENTROPY_MIN_SPAN / 2, middle + ENTROPY_MIN_SPAN / 2])
        fig.add_annotation(text=f"every p within {high - low:.3f} nats of each other", showarrow=False,
                           xref="paper", yref="paper", x=0.01, y=0.02, xanchor="left", yanchor="bottom",
                           font={"size": 12, "color": "#666"})
    if A.exact_p_fit(p):
        ticks = table.assign(x=x_all).drop_duplicates("p").sort_values("x")
        fig.update_xaxes(tickvals=list(ticks["x"]), ticktext=list(ticks["p_bin"]))
    else:
        p_axis(fig, p)
    return fig
