"""The charts of the verdicts (lpstudy.results.answers): each arm's relative difference to the
reference with its fold-corrected interval, coloured by its verdict with a legend, the ROPE drawn
as a band; the field's measured share of the loss within folds next to what noise alone gives;
stability per arm against the reference."""

from __future__ import annotations

import plotly.graph_objects as go

from lpstudy.results.answers.answer_types import StabilityRow, VerdictAnswer
from lpstudy.results.charts.look import caption, figure, mark_empty
from lpstudy.results.tables.verdicts import COLOUR_RULE, NEUTRAL_COLOUR, VERDICT_COLOURS, arm_name


def equal_budget_chart(answer: VerdictAnswer) -> go.Figure:
    """A comparison's arms: loss(arm) − loss(reference) in nats over the folds with the verdict's
    interval (the answer's low/high), coloured by the verdict (VERDICT_COLOURS, with a legend); the
    reference at 0 in a neutral colour, the ROPE a band."""
    ref = answer.reference
    name = arm_name(ref.field, ref.value) if ref else "the reference"
    title = f"Equal-budget comparison: difference to the reference {name} (verdict's interval)"
    if not ref or not answer.arms:
        return mark_empty(figure(title, height=360), "needs the replicate runs of the reference and another arm on the same folds")
    fig = figure(title, "arm", f"loss(arm) − loss({name}) (nats)", height=380)
    margin = answer.rope.absolute
    if margin:
        fig.add_hrect(y0=-margin, y1=margin, fillcolor=VERDICT_COLOURS["equivalent"], opacity=0.12, line_width=0)
    fig.add_hline(y=0, line={"color": "#888", "dash": "dash"})
    fig.add_scatter(x=[name], y=[0.0], mode="markers", name="reference", showlegend=True,
                    marker={"size": 11, "color": NEUTRAL_COLOUR, "symbol": "diamond"},
                    hovertemplate=f"{name}: the reference<extra></extra>")
    labels = [arm_name(a.field, a.value) for a in answer.arms]
    for verdict, colour in VERDICT_COLOURS.items():
        rows = [(label, a) for label, a in zip(labels, answer.arms) if a.verdict == verdict]
        if not rows:
            verdict_legend_entry(fig, name, verdict, colour)
            continue
        fig.add_scatter(
            x=[label for label, _ in rows], y=[a.diff for _, a in rows], mode="markers", name=verdict,
            marker={"size": 11, "color": colour}, showlegend=True,
            error_y={"type": "data", "visible": True, "array": [(a.high or 0) - (a.diff or 0) for _, a in rows],
                     "arrayminus": [(a.diff or 0) - (a.low or 0) for _, a in rows]},
            customdata=[[a.n_folds, a.p_value_difference, 100 * (a.rel_diff or 0)] for _, a in rows],
            hovertemplate="%{x}: Δ %{y:+.4f} nats (%{customdata[2]:+.2f} % of the reference's loss) · folds "
                          "%{customdata[0]} · p-value %{customdata[1]:.3g}<extra>" + verdict + "</extra>")
    fig.update_xaxes(categoryorder="array", categoryarray=[name, *labels])
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"})
    return caption(fig, verdict_caption(answer, name))


def verdict_legend_entry(fig: go.Figure, x, verdict: str, colour: str) -> None:
    """A verdict no arm has still named in the legend in its colour (a point at no height)."""
    fig.add_scatter(x=[x], y=[None], mode="markers", name=verdict, marker={"size": 11, "color": colour},
                    showlegend=True, hoverinfo="skip")


def verdict_caption(answer: VerdictAnswer, name: str) -> str:
    """The colour rule and the interval, said once for every chart that colours arms by verdict."""
    return (f"{COLOUR_RULE}. Shaded: the ROPE. Bars: {100 * (1 - answer.alpha):.0f} % intervals corrected for the "
            f"{answer.k}-fold CV, as in the verdict table. Below 0: lower loss than {name}.")


def _rope_band(fig: go.Figure, answer: VerdictAnswer) -> float | None:
    """The ROPE as a band in % of the reference's mean loss; None (no band) where the reference has
    no finished run to scale it by (every run of it diverged)."""
    if answer.rope.relative is None:
        return None
    rope = 100 * answer.rope.relative
    fig.add_hrect(y0=-rope, y1=rope, fillcolor=VERDICT_COLOURS["equivalent"], opacity=0.12, line_width=0)
    return rope


def verdict_chart(answer: VerdictAnswer) -> go.Figure:
    """Relative difference loss(arm)/loss(reference) − 1 per arm, its interval, coloured by verdict."""
    ref = answer.reference
    title = "Verdict per arm: difference to the reference"
    if not ref or not answer.arms:
        return mark_empty(figure(title, height=360), "needs finished runs of the reference and another arm on the same folds")
    name = arm_name(ref.field, ref.value)
    fig = figure(title, "", f"loss / loss({name}) − 1 (%)", height=380)
    rope = _rope_band(fig, answer)
    fig.add_hline(y=0, line={"color": "#888", "dash": "dash"})
    labels = [arm_name(a.field, a.value) for a in answer.arms]
    for verdict, colour in VERDICT_COLOURS.items():
        rows = [(label, a) for label, a in zip(labels, answer.arms) if a.verdict == verdict]
        ys = [100 * (a.rel_diff or 0) for _, a in rows]
        if not rows:  # a point at no height: the verdict still has its place in the legend
            verdict_legend_entry(fig, labels[0], verdict, colour)
            continue
        fig.add_scatter(
            x=[label for label, _ in rows], y=ys, mode="markers", name=verdict, marker={"size": 11, "color": colour},
            showlegend=True,  # every verdict named, also one no arm has: the legend reads the same on every study
            error_y={"type": "data", "visible": True,
                     "array": [100 * ((a.rel_high or 0) - (a.rel_diff or 0)) for _, a in rows],
                     "arrayminus": [100 * ((a.rel_diff or 0) - (a.rel_low or 0)) for _, a in rows]},
            hovertemplate="%{x}: %{y:+.2f} %<extra>" + verdict + "</extra>")
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"})
    shaded = (f"Shaded: the ROPE, ±{rope:.2g} % of {name}'s mean loss" if rope is not None else
              f"No ROPE band: {name} has no finished run whose mean loss would scale it")
    return caption(fig, f"{COLOUR_RULE}. {shaded}. Bars: {100 * (1 - answer.alpha):.0f} % "
                        f"intervals corrected for the {answer.k}-fold CV. Below 0: lower loss than {name}.")


def stages_chart(answer: VerdictAnswer) -> go.Figure:
    """A study run --until-decided: each arm's relative difference to the reference at every look it
    was tested at (its folds so far), with its interval, coloured by the verdict at that look, against
    the ROPE band; the look that decided an arm is marked, and it has no look after it."""
    seq, ref = answer.sequential, answer.reference
    title = "Stages: each arm's difference to the reference at every look"
    fig = figure(title, "", f"loss / loss({arm_name(ref.field, ref.value)}) − 1 (%)" if ref else "", height=420)
    looks = [look for look in (seq.looks if seq else []) if look.over]
    if not ref or not seq or not looks:
        return mark_empty(fig, "needs the first stage's folds of the reference and another arm")
    field, name = ref.field, arm_name(ref.field, ref.value)
    rope = _rope_band(fig, answer)
    fig.add_hline(y=0, line={"color": "#888", "dash": "dash"})
    order = [a.value for a in seq.arms]
    tested = sorted(((arm_name(field, a.value), look, a) for look in looks for a in look.arms
                     if a.state != "stopped"), key=lambda row: (order.index(row[2].value), row[1].look))

    def where(rows):  # (arm, its folds at the look): a category within the arm's group
        return [[label for label, _, _ in rows], [f"{look.folds} folds" for _, look, _ in rows]]

    # the arms in their order, each with its looks: a multicategory axis orders them as the data first names them
    fig.add_scatter(x=where(tested), y=[None] * len(tested), mode="markers", showlegend=False, hoverinfo="skip")
    for verdict, colour in VERDICT_COLOURS.items():
        rows = [row for row in tested if row[2].state == verdict]
        decided = verdict != "undecided"
        fig.add_scatter(
            x=where(rows), y=[100 * (a.rel_diff or 0) for _, _, a in rows],
            mode="markers+text" if decided else "markers", name=verdict, showlegend=True,
            marker={"size": 13 if decided else 10, "color": colour, "symbol": "diamond" if decided else "circle"},
            text=[f"decided: {verdict}" for _ in rows] if decided else None, textposition="top center",
            textfont={"color": colour, "size": 12},
            error_y={"type": "data", "visible": True, "color": colour,
                     "array": [100 * ((a.rel_high or 0) - (a.rel_diff or 0)) for _, _, a in rows],
                     "arrayminus": [100 * ((a.rel_diff or 0) - (a.rel_low or 0)) for _, _, a in rows]},
            customdata=[[look.look, look.level] for _, look, _ in rows],
            hovertemplate="%{x}: %{y:+.2f} % · look %{customdata[0]}, tested at level %{customdata[1]:.2g}<extra>"
                          + verdict + "</extra>")
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"})
    shaded = (f"Shaded: the ROPE, ±{rope:.2g} % of {name}'s mean loss" if rope is not None else
              f"No ROPE band: {name} has no finished run whose mean loss would scale it")
    return caption(fig, "Per arm, its looks left to right (the folds run by then). Colour: the verdict at that "
                        f"look; a diamond: the look that decided it, after which it ran no more folds. {shaded}. "
                        f"Bars: {100 * (1 - answer.alpha):.0f} % "
                        f"intervals over the folds so far, corrected for the {answer.k}-fold CV; each look's test is "
                        "stricter, at the part of alpha it spends (the table below; O'Brien–Fleming spends little at "
                        "the first looks), with Holm across the arms.")


def fold_importance_chart(answer: VerdictAnswer) -> go.Figure:
    """The field's partial ω² within folds with its noncentral-F interval, and noise alone's level."""
    importance = answer.importance
    title = "What the compared field explains within folds (partial ω²)"
    fig = figure(title, "partial ω²", "", height=260)
    if not importance.shares:
        return mark_empty(fig, importance.reason or "nothing to measure")
    field, share = next(iter(importance.shares.items()))
    low, high = importance.low[field], importance.high[field]
    fig.add_bar(x=[share], y=[f"{field}: {share:.2f}"], orientation="h", marker_color="#1f77b4", name=field,
                showlegend=False, error_x={"type": "data", "array": [high - share], "arrayminus": [share - low], "visible": True})
    fig.add_vline(x=importance.null, line={"color": "#c8412c", "dash": "dot"},
                  annotation_text="noise alone (95th percentile)", annotation_position="top")
    fig.update_xaxes(range=[min(0.0, share - 0.05), 1])  # the share is median-unbiased, 0 or above
    return caption(fig, f"{importance.reason}. {importance.method or ''}. p-value of the corrected F test "
                        f"{importance.p_value:.3g}; "
                        f"η² {importance.eta_squared:.2f}, where noise alone gives {importance.eta_squared_null:.2f} on average.")


def _reach(top, bottom):
    """An error bar's length; none where the interval has no end (too few folds to bound it)."""
    return None if top is None or bottom is None else top - bottom


def _gap(upper: float | None, lower: float | None) -> float:
    """An error bar's length; 0 where either end is missing (no runs: no interval)."""
    return 0.0 if upper is None or lower is None else upper - lower


def stability_verdict_chart(answer: VerdictAnswer, metric: str) -> go.Figure:
    """Divergence rate per arm (Wilson interval), or an arm's difference to the reference in logit
    growth / smallest entropy (corrected interval)."""
    rows: list[StabilityRow] = getattr(answer.stability, metric)
    ref = answer.reference
    field = ref.field if ref else "p"
    titles = {"divergence": ("Divergence rate per arm against the reference", "diverged runs"),
              "logit_growth": ("Logit growth: difference to the reference", "Δ largest-logit growth"),
              "min_entropy": ("Smallest head entropy: difference to the reference", "Δ smallest entropy (nats)")}
    title, y_title = titles[metric]
    fig = figure(title, "", y_title, height=340)
    if not rows:
        return mark_empty(fig, "the runs record no such number" if metric != "divergence" else "no finished run yet")
    labels = [arm_name(field, r.value) for r in rows]
    if metric == "divergence":
        ys = [r.rate for r in rows]
        # the reference in the neutral colour of every chart that compares arms (tables.verdicts)
        fig.add_bar(x=labels, y=ys, marker_color=[NEUTRAL_COLOUR if r.p_value is None else "#c8412c" for r in rows],
                    showlegend=False,
                    error_y={"type": "data", "visible": True, "array": [_gap(r.high, r.rate) for r in rows],
                             "arrayminus": [_gap(r.rate, r.low) for r in rows]},
                    text=[f"{r.diverged}/{r.runs}" + (f" · Fisher p-value {r.p_value:.2g}" if r.p_value is not None
                                                             else " · reference") for r in rows], textposition="outside")
        fig.update_yaxes(range=[0, 1.05])
        return caption(fig, f"Bars: {100 * (1 - answer.alpha):.0f} % Wilson intervals. Fisher's exact test of each arm's "
                            "rate against the reference's, Holm-adjusted across the arms.")
    others = [r for r in rows if r.compared]
    fig.add_hline(y=0, line={"color": "#888", "dash": "dash"})
    fig.add_scatter(x=[arm_name(field, r.value) for r in others], y=[r.diff for r in others], mode="markers",
                    marker={"size": 10, "color": "#1f77b4"}, showlegend=False,
                    error_y={"type": "data", "visible": True, "array": [_reach(r.high, r.diff) for r in others],
                             "arrayminus": [_reach(r.diff, r.low) for r in others]},
                    text=[f"p-value {r.p_value:.2g}" if r.p_value is not None else "" for r in others],
                    hovertemplate="%{x}: %{y:+.3f} (%{text})<extra></extra>")
    what = "largest attention logit over training less its first value" if metric == "logit_growth" else \
        "smallest head entropy over training"
    return caption(fig, f"Per fold the arm's {what} minus {arm_name(field, ref.value if ref else None)}'s; "
                        f"{100 * (1 - answer.alpha):.0f} % intervals corrected for the {answer.k}-fold CV; hover: the Holm-adjusted p-value.")
