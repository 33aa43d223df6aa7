"""The charts of convergence as an answer (lpstudy.results.answers.convergence): the share of each
arm's (or p group's) runs that reached the loss threshold by each step, Kaplan–Meier with its
interval, coloured by the arm's verdict on the steps; and each arm's difference to the reference on
a convergence endpoint, with its fold-corrected interval, coloured by its verdict. And the rest of the
Convergence page: the runs' curves, the median curve with its band per p group, the steps to the loss
threshold and the area under the curve."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lpstudy.results import analysis as A
from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.results.charts.look import (GROUP_COLOURS, P_SCALE, STOPPED_COLOUR, caption, colour_at, draws_bands, figure,
                                         group_colours, lr_colour, mark_empty, p_axis, rgba)
from lpstudy.results.tables.verdicts import VERDICT_COLOURS, arm_name

REFERENCE_COLOUR = "#222222"
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SEARCH_CAVEAT = ("A search: each group's runs were sampled with their own learning rate and gain, so these curves "
                 "mix p with both (as on Effect of p); a gap between groups is not p's effect alone. A replicate "
                 "or comparison at fixed lr and gain gives p's own.")


def _rgba(colour: str, alpha: float) -> str:
    colour = colour.lstrip("#")
    r, g, b = (int(colour[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _to_horizon(curve: dict, end: float | None) -> tuple[list, list, list, list]:
    """A Kaplan–Meier curve's steps from step 0 (none reached yet) to the horizon (its last value held
    there): a group whose runs all reach the threshold at one step is a step, not a spike at it."""
    step, reached = list(curve["step"]), list(curve["reached"])
    low, high = list(curve["low"]), list(curve["high"])
    if not step or step[0] > 0:
        step, reached, low, high = [0, *step], [0.0, *reached], [0.0, *low], [0.0, *high]
    if end is not None and step[-1] < end:
        step, reached, low, high = [*step, end], [*reached, reached[-1]], [*low, low[-1]], [*high, high[-1]]
    return step, reached, low, high


def reach_chart(curves: list[dict], threshold: float, horizon: float | None, verdicts: dict | None = None,
                reference: str | None = None) -> go.Figure:
    """curves: [{name, step, reached, low, high, runs}] (Kaplan–Meier per arm or p group); verdicts
    {name: verdict on the steps} colours the arms (the reference in black), else each group its colour.
    Each curve is drawn from step 0 to the horizon; its interval only from MIN_INTERVAL_RUNS runs up (the
    pages' rule); every group visible where curves coincide (each its own dash, the earlier ones wider
    beneath); the legend beside the plot, clear of the title."""
    from lpstudy.results.analysis.best_of_m import MIN_INTERVAL_RUNS

    fig = figure(f"Runs that reached validation loss {threshold:g} (Kaplan–Meier, 95 % interval)", "step",
                 "share of runs", height=420)
    if not curves:
        return mark_empty(fig, "no learning curve recorded yet")
    end = horizon or max((max(c["step"]) for c in curves if len(c["step"])), default=None)
    banded = 0
    for i, curve in enumerate(curves):
        name = curve["name"]
        if verdicts is not None:
            verdict = "reference" if name == reference else verdicts.get(name, "undecided")
            colour = REFERENCE_COLOUR if name == reference else VERDICT_COLOURS[verdict]
            label = f"{name} ({verdict})"
        else:
            colour, label = GROUP_COLOURS[i % len(GROUP_COLOURS)], name
        runs = curve.get("runs")
        label += "" if runs is None else f", {runs} run{'' if runs == 1 else 's'}"
        step, reached, low, high = _to_horizon(curve, end)
        if runs is None or runs >= MIN_INTERVAL_RUNS:
            banded += 1
            fig.add_scatter(x=step, y=high, mode="lines", line={"width": 0, "shape": "hv"},
                            showlegend=False, hoverinfo="skip", legendgroup=name)
            fig.add_scatter(x=step, y=low, mode="lines", line={"width": 0, "shape": "hv"}, fill="tonexty",
                            fillcolor=_rgba(colour, 0.12), showlegend=False, hoverinfo="skip", legendgroup=name)
        width = 2 + 1.5 * (len(curves) - 1 - i) / max(1, len(curves) - 1) * 2  # the first widest: seen under the rest
        fig.add_scatter(x=step, y=reached, mode="lines", name=label, legendgroup=name,
                        line={"color": colour, "shape": "hv", "width": width, "dash": DASHES[i % len(DASHES)]},
                        hovertemplate=f"{name}<br>step %{{x}}: %{{y:.0%}} reached<extra></extra>")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    if end is not None:
        fig.update_xaxes(range=[0, end])
    fig.update_layout(legend={"orientation": "v", "yanchor": "top", "y": 1, "x": 1.02, "xanchor": "left"},
                      margin={"r": 200})
    text = ("Runs that never reached it: diverged or failed ones counted as never within the horizon"
            + (f" ({horizon:g} steps)" if horizon else "") + ", pruned or running ones censored where they stopped. "
            + (f"Shaded: the 95 % interval, drawn for groups of {MIN_INTERVAL_RUNS} runs or more. " if banded else
               f"No interval: every group holds under {MIN_INTERVAL_RUNS} runs. "))
    if verdicts is not None:
        text += ("Colour: the arm's verdict on the steps to reach it against the reference (green sooner, blue as soon "
                 "within the ROPE, red later, grey undecided; black the reference). ")
    return caption(fig, text)  # a search's caveat: above the charts, on the page and in the report


def convergence_verdict_chart(answer: VerdictAnswer, endpoint: str) -> go.Figure:
    """Each arm's relative difference to the reference on one endpoint, its interval, coloured by verdict."""
    convergence = answer.convergence
    rows = [a for a in convergence.arms if a.endpoint == endpoint] if convergence else []
    what = {"steps_to_threshold": "Steps to the threshold", "auc": "Area under the curve"}[endpoint]
    title = f"{what}: difference to the reference"  # whole in a half-width column at 1400 px (as Stability's)
    ref = (convergence.reference or {}).get(endpoint) if convergence else None
    if not convergence or not rows or not ref:
        return mark_empty(figure(title, height=360), "needs curves of the reference and another arm on the same folds")
    name = arm_name(ref.field, ref.value)
    unit = "steps" if endpoint == "steps_to_threshold" else "area"
    fig = figure(title, "", f"{unit} / {unit}({name}) − 1 (%)", height=380)
    rope = 100 * (convergence.rope[endpoint].relative or 0.0)
    fig.add_hrect(y0=-rope, y1=rope, fillcolor=VERDICT_COLOURS["equivalent"], opacity=0.12, line_width=0)
    fig.add_hline(y=0, line={"color": "#888", "dash": "dash"})
    labels = [arm_name(a.field, a.value) for a in rows]
    for verdict, colour in VERDICT_COLOURS.items():
        mine = [(label, a) for label, a in zip(labels, rows) if a.verdict == verdict]
        if not mine:  # every verdict in the legend, as the final loss's chart has it
            fig.add_scatter(x=[labels[0]], y=[None], mode="markers", name=verdict, marker={"size": 11, "color": colour},
                            hoverinfo="skip")
            continue
        fig.add_scatter(
            x=[label for label, _ in mine], y=[100 * (a.rel_diff or 0) for _, a in mine], mode="markers",
            name=verdict, marker={"size": 11, "color": colour},
            error_y={"type": "data", "visible": True,
                     "array": [100 * ((a.rel_high or 0) - (a.rel_diff or 0)) for _, a in mine],
                     "arrayminus": [100 * ((a.rel_diff or 0) - (a.rel_low or 0)) for _, a in mine]},
            customdata=[[a.censored] for _, a in mine],
            hovertemplate="%{x}: %{y:+.1f} % · %{customdata[0]} runs censored<extra>" + verdict + "</extra>")
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"})
    below = "sooner" if endpoint == "steps_to_threshold" else "less loss on the way"
    return caption(fig, f"Threshold {convergence.threshold:g} nats ({convergence.threshold_rule}); horizon "
                        f"{convergence.horizon:g} steps. Shaded: the ROPE, {convergence.rope[endpoint].words}. Bars: "
                        f"{100 * (1 - answer.alpha):.0f} % intervals corrected for the {answer.k}-fold CV, Holm "
                        f"across the arms. Below 0: {below} than {name}.")


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
        fig.add_scatter(x=xs, y=ys, mode="lines", line={"width": 1, "color": colour_at(centre, low, high)},
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
        fill = rgba(colour, 0.15)
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
        colour = lr_colour(rows.loc[reached, "lr"])
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
    colour = lr_colour(rows["lr"])
    fig.add_scatter(x=A.p_positions(rows["p"]), y=rows["auc"], mode="markers", marker={"size": 7, "opacity": 0.8, **colour},
                    customdata=rows["trial_number"], hovertemplate="trial %{customdata}<br>area %{y:.4f}<extra></extra>",
                    showlegend=False)
    p_axis(fig, rows["p"])
    return fig
