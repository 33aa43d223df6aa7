"""The charts of convergence as an answer (lpstudy.results.answers.convergence): the share of each
arm's (or p group's) runs that reached the loss threshold by each step, Kaplan–Meier with its
interval, coloured by the arm's verdict on the steps; and each arm's difference to the reference on
a convergence endpoint, with its fold-corrected interval, coloured by its verdict."""

from __future__ import annotations

import plotly.graph_objects as go

from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.results.charts import GROUP_COLOURS, caption, figure, mark_empty
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
