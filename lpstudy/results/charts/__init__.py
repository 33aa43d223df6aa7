"""The charts: one function per figure, Plotly figures of the frames made by lpstudy.results.analysis
and of the answers, shared by the Streamlit pages and `lpstudy report`. Every figure has a title (the
browser test reads them).

This module holds a study's own figures (trials by state, the optimisation history, loss against p,
the curves and their bands, maps over a grid, convergence and stability per p group, one trial's
dynamics) and the look every chart shares (`figure`, `mark_empty`, `caption`, p's axis, colours);
the modules beside it draw one subject each, with these helpers: compute (what the trials spent),
convergence (convergence as an answer), lens (the stability lens), search (what a search says about
p) and verdicts (the arms' verdicts).

p = ∞ is drawn right of the largest finite p and labelled ∞ (analysis.inf_position/p_ticks);
learning rates are coloured on a log scale; diverged runs are marked apart (a red ×).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.reading.point_sample import CHART_POINTS, box_statistics, drawn_points, step_points

P_SCALE = "Viridis"
# Up to ten groups of p get colours a person tells apart (Plotly's D3 palette, a qualitative one);
# more groups fall back to the continuous P_SCALE.
GROUP_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf")
MAX_BANDS = 4  # more 25–75 % bands than this overlap into one cloud: draw the medians alone
LR_SCALE = "Plasma"
DIVERGED_COLOUR = "#d62728"
TEMPLATE = "plotly_white"
HEIGHT = 420


def figure(title: str, x_title: str = "", y_title: str = "", height: int = HEIGHT) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title={"text": title, "x": 0.01, "xanchor": "left"}, template=TEMPLATE, height=height,
                      margin={"l": 60, "r": 20, "t": 60, "b": 50}, xaxis_title=x_title, yaxis_title=y_title,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 1, "xanchor": "right"})
    return fig


EMPTY_LINE = 48  # characters a line of an empty chart's message: whole in a half-width column


def mark_empty(fig: go.Figure, text: str) -> go.Figure:
    import textwrap

    text = "<br>".join(textwrap.wrap(text, EMPTY_LINE, break_on_hyphens=False)) or text
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                       font={"size": 14, "color": "#666"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def p_axis(fig: go.Figure, p: pd.Series, row_col: dict | None = None) -> None:
    """Label the p axis, with ∞ at its drawn position."""
    ticks = A.p_ticks(pd.Series(p, dtype="float64"))
    if ticks is not None:
        fig.update_xaxes(tickvals=ticks[0], ticktext=ticks[1], **(row_col or {}))


MAX_BIN_LABELS = 6  # up to this many p bins are labelled with their range ("1–1.38"), more by their centre
MAX_GROUP_TICKS = 10  # more p groups than this get a tick at every k-th point


def _p_group_axis(fig: go.Figure, rows: pd.DataFrame, x: pd.Series) -> None:
    """Ticks for a chart of p groups (a per_p_summary-like frame), at the points themselves: the
    values where they are exact values (they fit: analysis.exact_p_fit); for bins, each bin's range
    ("1–1.38") where there are few, else its centre (short numbers that never overlap); at most
    MAX_GROUP_TICKS of them; ∞ at its drawn place."""
    p = rows["p"].astype("float64").to_numpy()
    finite = np.isfinite(p)
    binned = bool((rows.loc[finite, "p_high"] > rows.loc[finite, "p_low"]).any())
    labels = list(rows["p_bin"])
    if binned and len(rows) > MAX_BIN_LABELS:
        labels = [A.INF_LABEL if not f else A.format_p(round(float(v), 2)) for v, f in zip(p, finite)]
    values = list(np.asarray(x, dtype="float64"))
    step = int(math.ceil(len(values) / MAX_GROUP_TICKS))
    keep = [i for i in range(len(values)) if i % step == 0 or not finite[i]]
    fig.update_xaxes(tickvals=[values[i] for i in keep], ticktext=[labels[i] for i in keep])


def log_ticks(fig: go.Figure, values: pd.Series, axis: str = "y") -> None:
    """A log axis (y or x) with readable ticks: 1, 10, 100, … (and 2 and 5 between when it spans
    little)."""
    v = values[(values > 0) & np.isfinite(values)].astype("float64")
    if v.empty:
        return
    low, high = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    decades = [10.0 ** e for e in range(low, high + 1)]
    span = math.log10(v.max()) - math.log10(v.min())  # decades the data spans
    ticks = decades if span >= 2.5 else sorted(d * m for d in decades for m in (1, 2, 5))
    update = fig.update_yaxes if axis == "y" else fig.update_xaxes
    update(type="log", tickvals=ticks, ticktext=[tick_text(t) for t in ticks])


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick_text(value: float) -> str:
    """A tick's label on a log axis: 0.001, 20, 5000 as they are; from 10⁵ up (and below 10⁻⁴) as
    10⁶ or 2×10⁶, never Python's or Plotly's 1e+06."""
    if value == 0 or 1e-4 <= abs(value) < 1e5:
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)))
    mantissa = round(value / 10.0 ** exponent, 3)
    power = f"10{str(exponent).translate(SUPERSCRIPTS)}"
    return power if mantissa == 1 else f"{mantissa:g}×{power}"


def group_colours(n: int, positions: Sequence[float]) -> list[str]:
    """Distinguishable colours for up to ten groups (in p order), else the continuous p scale."""
    if n <= len(GROUP_COLOURS):
        return list(GROUP_COLOURS[:n])
    low, high = min(positions), max(positions)
    return [_colour_at(float(v), low, high) for v in positions]


def _p_text(p: pd.Series) -> list[str]:
    return [A.format_p(v) for v in p]


def _lr_colour(lr: pd.Series) -> dict:
    """Marker colours on a log scale of the learning rate; one colour when it does not vary."""
    if lr.isna().any() or lr.nunique() < 2:
        return {"color": "#1f77b4"}
    exponents = np.log10(lr.to_numpy(dtype="float64"))
    low, high = math.floor(exponents.min()), math.ceil(exponents.max())
    ticks = [float(e) for e in range(low, high + 1)]  # the decades, labelled as on a log axis
    if len([t for t in ticks if exponents.min() <= t <= exponents.max()]) < 2:  # less than a decade: 1, 2, 5
        ticks = [math.log10(10.0 ** e * m) for e in range(low, high + 1) for m in (1, 2, 5)]
    return {"color": exponents, "colorscale": LR_SCALE, "showscale": True,
            "colorbar": {"title": {"text": "lr"}, "tickvals": ticks,
                         "ticktext": [tick_text(10.0 ** t) for t in ticks], "len": 0.8}}


# --- Home ------------------------------------------------------------------------------------

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


# --- Effect of p -----------------------------------------------------------------------------

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
    text = np.array(_p_text(done["p"]), dtype=object)
    details = "<br>p %{text}<br>lr %{customdata[1]:.3g}<br>gain₀ %{customdata[2]:.3g}"
    if ok.any():
        colour = _lr_colour(done.loc[ok, "lr"])
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
    fig.add_scatter(x=x, y=rows["mean"], mode=_joined(rows["n_ok"]) + "+text", name="mean (95 % interval)",
                    marker={"size": 8, "color": "#1f77b4"}, line={"color": "#1f77b4"},
                    text=[f"n = {int(n)}" if n < 3 else "" for n in rows["n_ok"]],
                    # left of the rightmost point (∞, or the largest p), where the right edge would cut it
                    textposition=["middle left" if xi >= float(np.max(x)) else "middle right" for xi in x],
                    textfont={"size": 10, "color": "#555"},
                    error_y={"type": "data", "array": upper, "arrayminus": lower, "visible": True},
                    customdata=np.column_stack([rows["p_bin"], rows["n_ok"], rows["std"].fillna(0)]),
                    hovertemplate="p %{customdata[0]}<br>mean %{y:.4f} ± %{customdata[2]:.4f} (sd)"
                                  "<br>n %{customdata[1]}<extra></extra>")
    _fit_axis(fig, float((rows["mean"] - lower).min()), float((rows["mean"] + upper).max()))
    _p_group_axis(fig, rows, x)
    if not drawn.all():
        caption(fig, "Intervals are drawn from 3 runs up; n under a point says how few it holds.")
    return fig


JOIN_RUNS = 3  # p groups are joined by a line only where each holds this many runs (and has its interval)


def _joined(n: pd.Series) -> str:
    """Markers joined by a line only where every group holds JOIN_RUNS runs: a line through groups
    of one or two, which have no interval, draws their noise as a shape."""
    return "markers+lines" if len(n) and int(n.min()) >= JOIN_RUNS else "markers"


def _fit_axis(fig: go.Figure, low: float, high: float, room_below: float = 1.0) -> None:
    """A y axis that fits what is drawn (points and the intervals drawn), with a little room."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return
    pad = 0.12 * ((high - low) or 0.05)
    fig.update_yaxes(range=[low - room_below * pad, high + pad])


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
        _p_group_axis(fig, profile, x)
        return caption(fig, "Every p group holds one completed run that did not diverge: its loss, hollow; an expected "
                            "best of m needs two runs in a group.")
    m = int(m)
    fig.add_scatter(x=x, y=profile["expected_best"], mode=_joined(profile["n"]) + "+text",
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
    _fit_axis(fig, float(shown.min()), float(shown.max()))
    _p_group_axis(fig, profile, x)
    ones = profile.loc[alone, "p_bin"].tolist()
    single = f" p {', '.join(map(str, ones))}: one run, its loss alone." if ones else ""
    return caption(fig, f"Per p group, its completed runs that did not diverge: the expected lowest loss of {m} "
                        "of them (m: the smallest group's runs, so every group is compared at the same number of "
                        "tries; 95 % bootstrap interval from 3 runs up; each group's runs in the hover) and, hollow, the lowest found, which falls "
                        "with a group's runs alone. p's effect with lr and the gain held apart is the surrogate's "
                        "chart." + single)


MAP_TITLES = {"lr": ("learning rate", "learning rate"), "fold": ("fold", "fold"),
              "repeat_fold": ("fold and repeat", "fold and repeat")}  # --repeats: a row per repeat of a fold


def _heatmap(cells: pd.DataFrame, value: str, title: str, colour_title: str, scale: str, by: str,
             zmin=None, zmax=None) -> go.Figure:
    y_name = MAP_TITLES.get(by, (by, by))[0]
    fig = figure(f"{title} over p × {y_name}", "p", y_name)
    cells = cells.dropna(subset=[value]) if value in cells else cells.iloc[0:0]
    if cells.empty:
        return mark_empty(fig, "no completed trial yet")
    x_labels = cells.sort_values("p_order")["p_bin"].drop_duplicates().tolist()
    y_labels = cells.sort_values("y_order")["y_bin"].drop_duplicates().tolist()
    grid = cells.pivot_table(index="y_bin", columns="p_bin", values=value, aggfunc="first").reindex(
        index=y_labels, columns=x_labels)
    counts = cells.pivot_table(index="y_bin", columns="p_bin", values="n", aggfunc="first").reindex(
        index=y_labels, columns=x_labels)
    fig.add_heatmap(z=grid.to_numpy(), x=x_labels, y=y_labels, colorscale=scale, zmin=zmin, zmax=zmax,
                    colorbar={"title": {"text": colour_title}}, customdata=counts.to_numpy(),
                    hovertemplate="p %{x}<br>" + y_name + " %{y}<br>" + colour_title
                                  + " %{z:.3f}<br>runs %{customdata}<extra></extra>")
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def loss_map(cells: pd.DataFrame, by: str = "lr") -> go.Figure:
    """Mean final validation loss per cell of p × learning rate (or p × fold for a grid)."""
    return _heatmap(cells, "mean_loss", "Validation loss", "loss", "Viridis_r", by)


def divergence_map(cells: pd.DataFrame, by: str = "lr") -> go.Figure:
    """Share of diverged runs per cell of p × learning rate (or p × fold for a grid)."""
    return _heatmap(cells, "divergence_rate", "Divergence rate", "diverged", "Reds", by, 0, 1)


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


# --- Convergence -----------------------------------------------------------------------------

def _colour_at(value: float, low: float, high: float, scale: str = P_SCALE) -> str:
    from plotly.colors import sample_colorscale

    t = 0.5 if high <= low else min(1.0, max(0.0, (value - low) / (high - low)))
    return sample_colorscale(scale, [t])[0]


def loss_curves(curves: pd.DataFrame, trials: pd.DataFrame, column: str = "val_loss",
                levels: int = 12, max_trials: int = 400) -> go.Figure:
    """Every trial's curve of `column` against step, coloured by p on a continuous scale (∞ at the
    top). Trials are drawn in `levels` colour bands (one trace each, so a thousand curves stay
    quick); at most max_trials curves, the latest first."""
    what = {"val_loss": "Validation", "train_loss": "Training"}.get(column, column)
    fig = figure(f"{what} loss curves, coloured by p", "step", f"{what.lower()} loss")
    joined = A.with_p(curves, trials).dropna(subset=[column, "p"])
    if joined.empty:
        return mark_empty(fig, "no learning curve recorded yet")
    numbers = sorted(joined["trial_number"].unique())[-max_trials:]
    joined = joined[joined["trial_number"].isin(numbers)]
    position = A.p_positions(joined["p"])
    low, high = float(position.min()), float(position.max())
    span = (high - low) or 1.0
    joined = joined.assign(_pos=position, _level=np.minimum(levels - 1, ((position - low) / span * levels).astype(int)))
    labels = {n: f"trial {n}, p {A.format_p(p)}" for n, p in joined.groupby("trial_number")["p"].first().items()}
    joined = joined.sort_values(["_level", "trial_number", "step"])
    for level, group in joined.groupby("_level", sort=True):
        # one trace per colour band: the band's curves joined by gaps (NaN) between trials
        numbers = group["trial_number"].to_numpy()
        starts = np.flatnonzero(np.diff(numbers)) + 1
        xs = np.insert(group["step"].to_numpy(dtype="float64"), starts, np.nan)
        ys = np.insert(group[column].to_numpy(dtype="float64"), starts, np.nan)
        texts = np.insert(np.array([labels[n] for n in numbers], dtype=object), starts, "")
        centre = low + (level + 0.5) * span / levels
        fig.add_scatter(x=xs, y=ys, mode="lines", line={"width": 1, "color": _colour_at(centre, low, high)},
                        opacity=0.6, text=texts, hovertemplate="%{text}<br>step %{x}<br>loss %{y:.4f}<extra></extra>",
                        showlegend=False, connectgaps=False)
    # Diverged runs leave through the top instead of squashing every other curve.
    first = joined.sort_values("step").groupby("trial_number")[column].first()
    top = float(first.quantile(0.95)) if len(first) else float(joined[column].max())
    bottom = float(joined[column].min())
    fig.update_yaxes(range=[bottom - 0.03 * (top - bottom), top + 0.05 * (top - bottom)])
    ticks = A.p_ticks(joined["p"])
    colourbar = {"title": {"text": "p"}, "len": 0.8}
    if ticks is not None:
        colourbar.update(tickvals=ticks[0], ticktext=ticks[1])
    fig.add_scatter(x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                    marker={"color": [low, high], "colorscale": P_SCALE, "cmin": low, "cmax": high,
                            "showscale": True, "colorbar": colourbar})
    return fig


def _rgba(colour: str, alpha: float) -> str:
    if colour.startswith("#"):
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        return f"rgba({r}, {g}, {b}, {alpha})"
    return colour.replace("rgb(", "rgba(").replace(")", f", {alpha})")


def draws_bands(bands: "A.CurveBands | pd.DataFrame") -> bool:
    """Whether median_curves draws the 25–75 % bands: only for at most MAX_BANDS p groups, each
    holding JOIN_RUNS trials (the quartiles of two runs are the runs themselves)."""
    bands = bands.bands if isinstance(bands, A.CurveBands) else bands
    return bands.empty or (bands["p_bin"].nunique() <= MAX_BANDS
                           and int(bands.groupby("p_bin")["n"].max().min()) >= JOIN_RUNS)


STOPPED_COLOUR = "rgba(120, 120, 120, 0.35)"
CAPTION_WIDTH = 68  # characters a line of a chart's caption holds before it wraps (a half-page chart)


def caption(fig: go.Figure, text: str) -> go.Figure:
    """Write `text` under the plot, small and grey, wrapped into lines of CAPTION_WIDTH characters:
    what the chart is taken over (a cohort, what was left out)."""
    import textwrap

    if not text:
        return fig
    lines = textwrap.wrap(text, CAPTION_WIDTH)
    bottom = int(fig.layout.margin.b or 0)
    fig.add_annotation(text="<br>".join(lines), showarrow=False, xref="paper", yref="paper", x=0, y=0,
                       xanchor="left", yanchor="top", yshift=-54, align="left",
                       font={"size": 11, "color": "#666"})
    extra = 16 * len(lines) + 12  # under the axis title
    fig.update_layout(margin={"b": bottom + extra}, height=(fig.layout.height or HEIGHT) + extra)
    return fig


def median_curves(bands: "A.CurveBands | pd.DataFrame", column_title: str = "validation loss") -> go.Figure:
    """The median curve per p group over one cohort of trials at every step (analysis.cohort),
    each group its own distinguishable colour, with the band between its 25th and 75th percentiles
    where there are at most MAX_BANDS groups (more overlap into one cloud; the hover gives each
    group's n). The trials outside the cohort (pruned, running) are drawn thin and grey, one legend
    entry, and the caption says which cohort."""
    cohort = bands if isinstance(bands, A.CurveBands) else None
    frame = bands.bands if isinstance(bands, A.CurveBands) else bands
    centres = frame.groupby("p_bin", sort=False)["p_center"].first() if not frame.empty else pd.Series(dtype=float)
    with_bands = draws_bands(frame)
    band_text = " (25–75 % band)" if with_bands else ""
    title = (f"Median validation loss per p{band_text}" if column_title == "validation loss"
             else f"Median {column_title} per p{band_text}")
    fig = figure(title, "step", column_title)
    stopped = cohort.stopped if cohort is not None else pd.DataFrame()
    if frame.empty and stopped.empty:
        return mark_empty(fig, "no learning curve recorded yet")
    if len(stopped):
        # one trace for every curve outside the cohort, joined by gaps (NaN) between trials
        numbers = stopped["trial_number"].to_numpy()
        starts = np.flatnonzero(np.diff(numbers)) + 1
        texts = np.array([f"trial {int(n)} ({s.lower()}), p {b}" for n, s, b in
                          zip(numbers, stopped["state"], stopped["p_bin"])], dtype=object)
        fig.add_scatter(x=np.insert(stopped["step"].to_numpy(dtype="float64"), starts, np.nan),
                        y=np.insert(stopped["value"].to_numpy(dtype="float64"), starts, np.nan),
                        text=np.insert(texts, starts, ""), mode="lines", connectgaps=False,
                        line={"color": STOPPED_COLOUR, "width": 1},
                        name=f"not in the median ({cohort.n_stopped if cohort is not None else len(stopped)})",
                        hovertemplate="%{text}<br>step %{x}<br>%{y:.4f}<extra></extra>")
    position = A.p_positions(centres)
    order = sorted(centres.index, key=lambda label: float(position[label]))
    colours = dict(zip(order, group_colours(len(order), [float(position[label]) for label in order])))
    for label, group in sorted(frame.groupby("p_bin", sort=False), key=lambda item: order.index(item[0])):
        colour = colours[label]
        fill = _rgba(colour, 0.15)
        if with_bands:
            fig.add_scatter(x=[*group["step"], *group["step"][::-1]], y=[*group["q75"], *group["q25"][::-1]],
                            mode="lines", fill="toself", fillcolor=fill, line={"width": 0}, hoverinfo="skip",
                            showlegend=False, legendgroup=label)
        fig.add_scatter(x=group["step"], y=group["median"], mode="lines", name=_cohort_name(label, group["n"]),
                        line={"color": colour, "width": 2}, legendgroup=label,
                        customdata=group["n"], hovertemplate=f"p {label}<br>step %{{x}}<br>median %{{y:.4f}}"
                                                             "<br>trials %{customdata}<extra></extra>")
    fig.update_layout(legend={"orientation": "v", "y": 1, "x": 1.02, "xanchor": "left", "yanchor": "top"})
    if cohort is not None:
        caption(fig, cohort.caption())
    return fig


def _cohort_name(label: str, n: pd.Series) -> str:
    """A cohort curve's legend: its trials, and where early steps hold fewer (resumed trials), how few."""
    most, least = int(n.max()), int(n.min())
    return f"p {label} (n = {most})" if least == most else f"p {label} (n = {most}, {least} at some steps)"


def steps_to_threshold_chart(convergence: pd.DataFrame, threshold: float) -> go.Figure:
    """Steps to reach the loss threshold against p; runs that never reached it as grey ▲ on top."""
    fig = figure(f"Steps to reach validation loss {threshold:g}", "p", "steps")
    rows = convergence[convergence["p"].notna() & ~convergence["diverged"].astype(bool)]
    if rows.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    x = A.p_positions(rows["p"])
    reached = rows["reached"].astype(bool)
    if reached.any():
        colour = _lr_colour(rows.loc[reached, "lr"])
        fig.add_scatter(x=x[reached], y=rows.loc[reached, "steps_to_threshold"], mode="markers", name="reached",
                        marker={"size": 7, "opacity": 0.8, **colour},
                        customdata=rows.loc[reached, "trial_number"],
                        hovertemplate="trial %{customdata}<br>steps %{y}<extra></extra>")
    if (~reached).any():
        top = float(rows["steps_to_threshold"].max()) if reached.any() else 1.0
        fig.add_scatter(x=x[~reached], y=np.full(int((~reached).sum()), top * 1.08), mode="markers",
                        name="never reached", marker={"symbol": "triangle-up", "size": 8, "color": "#9e9e9e"},
                        customdata=rows.loc[~reached, "trial_number"],
                        hovertemplate="trial %{customdata} never reached it<extra></extra>")
    p_axis(fig, rows["p"])
    return fig


def auc_chart(convergence: pd.DataFrame) -> go.Figure:
    fig = figure("Area under the validation curve against p", "p", "mean loss over training (area / steps)")
    rows = convergence[convergence["p"].notna() & convergence["auc"].notna() & ~convergence["diverged"].astype(bool)]
    if rows.empty:
        return mark_empty(fig, "no completed trial without divergence yet")
    colour = _lr_colour(rows["lr"])
    fig.add_scatter(x=A.p_positions(rows["p"]), y=rows["auc"], mode="markers", marker={"size": 7, "opacity": 0.8, **colour},
                    customdata=rows["trial_number"], hovertemplate="trial %{customdata}<br>area %{y:.4f}<extra></extra>",
                    showlegend=False)
    p_axis(fig, rows["p"])
    return fig


# --- Stability -------------------------------------------------------------------------------

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


# --- Trials ----------------------------------------------------------------------------------

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



def mark_sample(fig: go.Figure, note: str) -> go.Figure:
    """Write on the figure, under its title, that it draws a sample of the trials' curves
    (lpstudy.results.reading.curve_sample) or points (lpstudy.results.reading.point_sample)."""
    from lpstudy.results.reading.curve_sample import sample_label

    top = max(int(fig.layout.margin.t or 0), 100)  # title and note at the top, the legend above the plot below them
    fig.update_layout(title={"subtitle": {"text": sample_label(note), "font": {"size": 11, "color": "#666"}},
                             "y": 0.98, "yref": "container", "yanchor": "top"},
                      margin={"t": top})
    return fig
