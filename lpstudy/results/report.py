"""`lpstudy report`: the dashboard's figures for one study in one HTML file that opens offline
(plotly.js is embedded once), with the numbers per p as tables. The figures are the same functions
(lpstudy.results.charts over lpstudy.results.analysis) that the Streamlit pages draw."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from lpstudy.results import analysis as A
from lpstudy.results import charts as C
from lpstudy.results.columns import labelled
from lpstudy.files import atomic_write_text
from lpstudy.results.curve_sample import importance_sample
from lpstudy.results.frames import StudyData, TrialReader, load_study
from lpstudy.db.urls import redact


def default_threshold(data: StudyData) -> float:
    spec = data.info.spec.get("loss_threshold")
    if spec:
        return float(spec)
    finals = A.successful(data.trials)["loss"]
    return round(float(finals.quantile(0.75)), 2) if len(finals) else 2.0


def report_sections(data: StudyData, threshold: float | None = None, bins: int | None = None
                    ) -> list[tuple[str, list]]:
    """The report's sections: (title, [figures, DataFrames or sentences]), the same as the dashboard's
    pages."""
    trials, curves = data.trials, data.curves
    # the pages' groups, one for every chart: the spread phase's, over the searched p range
    bins = A.default_p_groups(trials, data.info.spec) if bins is None else A.page_p_groups(trials, bins, data.info.spec)
    threshold = default_threshold(data) if threshold is None else threshold
    overview = [C.states_chart(A.state_counts(trials)), C.history_chart(trials)]
    if trials.empty:
        return [("Overview", overview)]
    summary = A.per_p_summary(trials, bins)
    by = A.map_axis(trials) or "lr"
    from lpstudy.results.answers import answered_by_verdicts, has_verdicts

    searched = not answered_by_verdicts(data.info)
    effect: list = []
    if searched:  # what the search can say about p, with lr and gain held apart
        from lpstudy.results.answers.search import search_effect
        from lpstudy.results.search_charts import surrogate_profile_chart

        answer = search_effect(data)
        effect += [answer["sentence"], *([f"What would decide it: {answer['suggest']}"] if answer["suggest"] else []),
                   surrogate_profile_chart(answer)]
    effect.append(C.loss_vs_p(trials))
    if searched:  # what each p reached, every group at the same number of runs
        profile = A.tuned_profile(trials, bins)
        effect += [C.tuned_profile_chart(profile)]
    effect += [C.mean_loss_per_p(summary), C.loss_map(A.p_map(trials, bins, by=by), by)]
    answer = None
    if has_verdicts(data):
        # the verdicts, as `lpstudy verdict` and the Effect of p page give them (lpstudy.results.answers)
        from lpstudy.results import verdict_charts as V
        from lpstudy.results.answers import study_answer
        from lpstudy.results.verdict_table import sequential_lines, verdict_frame, verdict_title

        answer = study_answer(data)
        effect += [f"Verdict. {answer['sentence']}", V.verdict_chart(answer), V.fold_importance_chart(answer),
                   verdict_title(answer), verdict_frame(answer), *sequential_lines(answer)]
    else:
        effect.append(C.importance_chart(A.param_importance(importance_sample(trials), data.info.spec)))
    effect.append(summary.drop(columns=["p", "p_low", "p_high"]))
    if searched and len(profile):
        effect.append(profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
    note = data.curve_note  # a big study: the curves of a sample (lpstudy.results.curve_sample)
    drawn = trials[trials["number"].isin(set(curves["trial_number"]))] if note else trials
    convergence_rows = A.convergence_by_trial(curves, drawn, threshold)
    convergence = [C.loss_curves(curves, trials, "val_loss"), C.loss_curves(curves, trials, "train_loss"),
                   C.median_curves(A.curve_cohort(curves, trials, "val_loss", bins)),
                   C.steps_to_threshold_chart(convergence_rows, threshold), C.auc_chart(convergence_rows)]
    stability = [C.divergence_rate_chart(A.divergence_rates(trials, bins)), C.divergence_map(A.p_map(trials, bins, by=by), by),
                 C.max_grad_norm_chart(A.max_grad_norms(curves, trials)),
                 C.gain_chart(A.curve_cohort(curves, trials, "gain_mean", bins,
                                         include_diverged=A.successful(trials).empty)),
                 C.spread_chart(trials, bins)]
    from lpstudy.results.lens_charts import lens_section

    lens = lens_section(trials, curves, bins)
    if answer is not None:
        stability.append(V.stability_verdict_chart(answer, "divergence"))
        lens += [V.stability_verdict_chart(answer, "logit_growth"), V.stability_verdict_chart(answer, "min_entropy")]
    if note:
        for fig in [*convergence, stability[2], stability[3], *lens[2:]]:
            if not isinstance(fig, pd.DataFrame):
                C.mark_sample(fig, note)
    return [("Overview", overview), ("Effect of p", effect), ("Convergence", convergence), ("Stability", stability),
            ("Stability lens", lens)]


def _table(frame: pd.DataFrame) -> str:
    """A table under human headers, each number in its column's format (lpstudy.results.columns)."""
    return labelled(frame).to_html(index=False, na_rep="–", border=0, classes="numbers")


def render_report(data: StudyData, storage_url: str, threshold: float | None = None, bins: int | None = None) -> str:
    """The whole report as one HTML document (plotly.js inline: no network needed to open it)."""
    from plotly.offline import get_plotlyjs

    trials = data.trials
    counts = A.state_counts(trials)
    best = A.best_trial(trials)
    problem = A.data_problem(trials, data.name)
    facts = [f"storage {html.escape(redact(storage_url))}", f"kind {html.escape(data.info.kind)}",
             f"preset {html.escape(str(data.info.preset))}",
             ", ".join(f"{n} {s.lower()}" for s, n in counts.items() if n)]
    if best is not None:
        facts.append(f"best: trial {int(best['number'])}, loss {best['loss']:.4f} at p = {A.format_p(best['p'])}, "
                     f"lr = {best['lr']:.3g}, gain₀ = {best['gain_init']:.3g}")
    parts = [f"<h1>lpstudy report: {html.escape(data.name)}</h1>",
             f"<p class='facts'>{' · '.join(facts)}</p>",
             f"<p class='facts'>written {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}</p>"]
    if problem:
        parts.append(f"<p class='problem'>{html.escape(problem)}</p>")
    if data.curve_note:
        parts.append(f"<p class='facts'>{html.escape(data.curve_note)}</p>")
    nav = []
    for number, (title, items) in enumerate(report_sections(data, threshold, bins)):
        anchor = f"s{number}"
        nav.append(f"<a href='#{anchor}'>{html.escape(title)}</a>")
        parts.append(f"<h2 id='{anchor}'>{html.escape(title)}</h2><div class='grid'>")
        for item in items:
            if isinstance(item, str):  # what the study lets the reader conclude, in words
                parts.append(f"<div class='cell wide'><p class='answer'>{html.escape(item)}</p></div>")
            elif isinstance(item, pd.DataFrame):
                parts.append(f"<div class='cell wide'>{_table(item)}</div>")
            elif isinstance(item, str):  # a sentence: what the numbers let the reader conclude
                parts.append(f"<p class='cell wide'>{html.escape(item)}</p>")
            else:
                parts.append("<div class='cell'>" + item.to_html(
                    full_html=False, include_plotlyjs=False, default_width="100%",
                    config={"displaylogo": False, "responsive": True}) + "</div>")
        parts.append("</div>")
    style = """
      body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
      nav a{margin-right:16px} .facts{color:#555;margin:4px 0} .problem{background:#fff3cd;padding:8px 12px}
      .grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}
      @media (max-width:1100px){.grid{grid-template-columns:minmax(0,1fr)}}
      .cell{min-width:0} .answer{background:#e8f1fb;padding:8px 12px;margin:0}
      .cell.wide{grid-column:1/-1;overflow-x:auto} table.numbers{border-collapse:collapse;font-size:13px}
      table.numbers td,table.numbers th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
    """
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>lpstudy report: {html.escape(data.name)}</title><style>{style}</style>"
            f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
            f"<nav>{''.join(nav)}</nav>{''.join(parts)}</body></html>")


def write_report(reader: TrialReader, study_name: str, output: str | Path, threshold: float | None = None,
                 bins: int | None = None) -> Path:
    """Load the study (read-only), render it and write the HTML atomically; the path written."""
    data = load_study(reader, study_name)
    text = render_report(data, reader.url, threshold, bins)
    return atomic_write_text(output, text)


__all__ = ["render_report", "report_sections", "write_report", "default_threshold"]
