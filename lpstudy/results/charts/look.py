"""The look every chart shares: a figure with its title and size (`figure`), an empty chart's message
(`mark_empty`), a caption under a chart (`caption`), a sampled chart's note (`mark_sample`), p's axis
(p = ∞ drawn right of the largest finite p and labelled ∞: analysis.inf_position/p_ticks) and a p
group's, log ticks, colours (p's, the p groups', learning rates' on a log scale, a diverged run's red)
and the heatmap over a grid that the Effect of p and Stability pages both draw. Every module of
lpstudy.results.charts draws with these."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A

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


EMPTY_LINE = 48  # characters a line of an empty chart's message: whole in a half-width column at 1400 px


def mark_empty(fig: go.Figure, text: str) -> go.Figure:
    import textwrap

    text = "<br>".join(textwrap.wrap(text, EMPTY_LINE, break_on_hyphens=False)) or text
    fig.add_annotation(name="empty", text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
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


def p_group_axis(fig: go.Figure, rows: pd.DataFrame, x: pd.Series) -> None:
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
    return [colour_at(float(v), low, high) for v in positions]


def p_text(p: pd.Series) -> list[str]:
    return [A.format_p(v) for v in p]


def lr_colour(lr: pd.Series) -> dict:
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


JOIN_RUNS = 3  # p groups are joined by a line only where each holds this many runs (and has its interval)


def joined(n: pd.Series) -> str:
    """Markers joined by a line only where every group holds JOIN_RUNS runs: a line through groups
    of one or two, which have no interval, draws their noise as a shape."""
    return "markers+lines" if len(n) and int(n.min()) >= JOIN_RUNS else "markers"


def fit_axis(fig: go.Figure, low: float, high: float, room_below: float = 1.0) -> None:
    """A y axis that fits what is drawn (points and the intervals drawn), with a little room."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return
    pad = 0.12 * ((high - low) or 0.05)
    fig.update_yaxes(range=[low - room_below * pad, high + pad])


MAP_TITLES = {"lr": ("learning rate", "learning rate"), "fold": ("fold", "fold"),
              "repeat_fold": ("fold and repeat", "fold and repeat")}  # --repeats: a row per repeat of a fold


def heatmap(cells: pd.DataFrame, value: str, title: str, colour_title: str, scale: str, by: str,
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


def colour_at(value: float, low: float, high: float, scale: str = P_SCALE) -> str:
    from plotly.colors import sample_colorscale

    t = 0.5 if high <= low else min(1.0, max(0.0, (value - low) / (high - low)))
    return sample_colorscale(scale, [t])[0]


def rgba(colour: str, alpha: float) -> str:
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
CAPTION_WIDTH = 68  # characters a line of a chart's caption holds before it wraps (a half-page chart at 1400 px)
CAPTION_LINE_PX = 16  # what each line of a caption adds under the plot


def caption(fig: go.Figure, text: str) -> go.Figure:
    """Write `text` under the plot, small and grey, wrapped into lines of CAPTION_WIDTH characters
    (the dashboard wraps it again for its column: fitted_caption): what the chart is taken over (a
    cohort, what was left out)."""
    import textwrap

    if not text:
        return fig
    lines = textwrap.wrap(text, CAPTION_WIDTH)
    bottom = int(fig.layout.margin.b or 0)
    fig.add_annotation(name="caption", text="<br>".join(lines), showarrow=False, xref="paper", yref="paper",
                       x=0, y=0, xanchor="left", yanchor="top", yshift=-54, align="left",
                       font={"size": 11, "color": "#666"})
    extra = CAPTION_LINE_PX * len(lines) + 12  # under the axis title
    fig.update_layout(margin={"b": bottom + extra}, height=(fig.layout.height or HEIGHT) + extra)
    return fig


def fitted_caption(fig: go.Figure, chars: int) -> go.Figure:
    """The figure with its caption (caption) and an empty chart's message (mark_empty) wrapped again
    into lines of at most `chars` characters, its height and bottom margin following the lines the
    caption gained or lost (a copy: a cached figure stays as it was)."""
    import textwrap

    notes = [i for i, note in enumerate(fig.layout.annotations) if note.name in ("caption", "empty")]
    if not notes:
        return fig
    fig = go.Figure(fig)
    for i in notes:
        note = fig.layout.annotations[i]
        before = note.text.split("<br>")
        text = before[0]
        for line in before[1:]:  # a line that ended inside a hyphenated word ("Gaussian-") joins the next whole
            text += line if text[-2:-1].isalnum() and text.endswith("-") else " " + line
        lines = textwrap.wrap(text, chars, break_on_hyphens=False)
        note.text = "<br>".join(lines)
        if note.name == "caption":  # under the plot: the chart grows by its lines
            grown = CAPTION_LINE_PX * (len(lines) - len(before))
            fig.update_layout(margin_b=(fig.layout.margin.b or 0) + grown,
                              height=(fig.layout.height or HEIGHT) + grown)
    return fig


def mark_sample(fig: go.Figure, note: str) -> go.Figure:
    """Write on the figure, under its title, that it draws a sample of the trials' curves
    (lpstudy.results.analysis.curve_sample) or points (lpstudy.results.reading.point_sample)."""
    from lpstudy.results.analysis.curve_sample import sample_label

    top = max(int(fig.layout.margin.t or 0), 100)  # title and note at the top, the legend above the plot below them
    fig.update_layout(title={"subtitle": {"text": sample_label(note), "font": {"size": 11, "color": "#666"}},
                             "y": 0.98, "yref": "container", "yanchor": "top"},
                      margin={"t": top})
    return fig
