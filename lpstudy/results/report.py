"""`lpstudy report`: the dashboard's figures for one study in one HTML file that opens offline, with
the numbers per p as tables. The figures are the same functions (lpstudy.results.charts over
lpstudy.results.analysis) that the Streamlit pages draw.

plotly.js is 4.8 MB of the file's 5 MB; it is embedded once, gzipped (1.5 MB; base64, 2 MB), and
unpacked by the browser's own DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and later)
before the figures are drawn; `plotlyjs="cdn"` loads it from Plotly's CDN instead (the file is then
the figures alone, but needs the network to open). Each figure's script waits for plotly.js
(DEFERRED: the browser leaves a script of an unknown type alone, and the loader runs them in order)."""

from __future__ import annotations

import base64
import gzip
import html
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from lpstudy.results import analysis as A
from lpstudy.results.tables.columns import labelled
from lpstudy.files import atomic_write_text
from lpstudy.results.reading.frames import StudyData, TrialReader
from lpstudy.results.reading.measured import study_best
from lpstudy.results.tables.glossary import glossary_lines
from lpstudy.db.urls import redact


def default_threshold(data: StudyData) -> float:
    """The loss the report times convergence to: the page's default (PageInputs.default_threshold)."""
    from lpstudy.results.pages import PageInputs

    return PageInputs(data).default_threshold


def _kept(memo: dict):
    """What PageInputs computes once, kept in `memo` (the report's header and its sections share the verdicts)."""
    def keep(key: tuple, build):
        if key not in memo:
            memo[key] = build()
        return memo[key]
    return keep


def report_sections(data: StudyData, threshold: float | None = None, bins: int | None = None,
                    keep: dict | None = None) -> list[tuple[str, list]]:
    """The report's sections: (title, [figures, DataFrames or sentences]), one per dashboard page, its
    figures the page's charts (lpstudy.results.pages, in their order), its sentences and tables the
    page's around them."""
    from lpstudy.results.answers import study_rope
    from lpstudy.results.pages import PAGES, PageInputs, applying, figure

    trials = data.trials
    # the pages' groups, one for every chart: the spread phase's, over the searched p range
    groups = A.default_p_groups(trials, data.info.spec) if bins is None else A.page_p_groups(trials, bins, data.info.spec)
    inputs = PageInputs(data, bins=groups, threshold=threshold, rope=study_rope(data.info.spec),  # the page's default
                        keep=None if keep is None else _kept(keep))

    def charts(page: str) -> list:
        return [figure(chart, inputs) for chart in applying(PAGES[page], inputs)]

    if trials.empty:
        return [("Overview", charts("Overview"))]
    effect: list = []
    if inputs.searched:  # what the search can say about p, with lr and gain held apart
        answer = inputs.effect
        effect += [answer.sentence, *([f"What would decide it: {answer.suggest}"] if answer.suggest else [])]
    if inputs.folded:  # the verdicts, as `lpstudy verdict` and the Effect of p page give them
        effect.append(f"Verdict. {inputs.answer.sentence}")
    effect += charts("Effect of p")
    if inputs.folded:
        from lpstudy.results.tables.summary import verdict_summary
        from lpstudy.results.tables.verdicts import sequential_lines, stages_frame, verdict_frame, verdict_title

        summary = verdict_summary(inputs.answer)  # what was compared, what is known, what would decide it
        effect += [*([summary] if summary else []), verdict_title(inputs.answer), verdict_frame(inputs.answer),
                   *sequential_lines(inputs.answer),
                   "The words of the table. " + " ".join(glossary_lines())]
        stages = stages_frame(inputs.answer)
        if len(stages):  # each arm's state at every look, as the page's table
            effect.append(stages)
    effect.append(inputs.summary.drop(columns=["p", "p_low", "p_high"]))
    if inputs.searched and len(inputs.profile):
        effect.append(inputs.profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
    mixed = [inputs.mixed_groups] if inputs.mixed_groups else []  # a search: its p groups mix p with lr and gain
    stability = [*mixed, *charts("Stability")]
    spread = A.replicate_spread(trials, groups)
    if len(spread):
        stability.append(spread.drop(columns=["p"]))
    lens = [*mixed, *charts("Stability lens")]
    if len(inputs.sensitivity):
        lens.append(inputs.sensitivity.drop(columns=["p", "p_order"]).rename(columns={"mean": "lr_sensitivity"}))
    convergence = charts("Convergence")
    converged = inputs.answer.convergence if inputs.folded else None
    if converged and converged.arms:  # as `lpstudy verdict` and the page
        from lpstudy.results.tables.convergence import convergence_frame, convergence_title, restricted_frame
        from lpstudy.results.tables.summary import convergence_summary

        convergence = [f"Convergence. {converged.sentence}", convergence_summary(inputs.answer),
                       convergence_title(inputs.answer),
                       convergence_frame(inputs.answer), restricted_frame(inputs.answer), *convergence]
    elif mixed:  # a search: its p groups mix p with the lr and gain its runs drew (the pages say so too)
        convergence = [*mixed, *convergence]
    elif inputs.searched:
        from lpstudy.results.charts.convergence import SEARCH_CAVEAT

        convergence = [SEARCH_CAVEAT, *convergence]
    return [("Overview", charts("Overview")), ("Effect of p", effect), ("Convergence", convergence),
            ("Stability", stability), ("Stability lens", lens)]


def _table(frame: pd.DataFrame) -> str:
    """A table under human headers, each number in its column's format (lpstudy.results.tables.columns)."""
    return labelled(frame).to_html(index=False, na_rep="–", border=0, classes="numbers")


PLOTLYJS = ("inline", "cdn")  # how the report carries plotly.js: gzipped inside, or from Plotly's CDN
DEFERRED = "text/lpstudy-after-plotly"  # a figure's script, run by the loader once plotly.js is there


def plotly_loader(plotlyjs: str = "inline") -> str:
    """The script that gets plotly.js (unpacked from the file, or from the CDN) and then runs every
    figure's deferred script in order; what a browser without DecompressionStream shows instead."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    run = (f"function lpRun(){{document.querySelectorAll('script[type=\"{DEFERRED}\"]').forEach(function(s){{"
           "var t=document.createElement('script');t.text=s.text;s.replaceWith(t);});}")
    if plotlyjs == "cdn":
        return (f"<script>{run}</script><script src='https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js' "
                "charset='utf-8' onload='lpRun()'></script>")
    packed = base64.b64encode(gzip.compress(get_plotlyjs().encode("utf-8"), 9, mtime=0)).decode("ascii")
    return ("<script>" + run + "window.addEventListener('DOMContentLoaded',function(){"
            "if(!window.DecompressionStream){document.body.insertAdjacentHTML('afterbegin',"
            "\"<p class='problem'>This browser cannot unpack the report's charts (it lacks DecompressionStream); "
            "open it in a current Chrome, Firefox or Safari, or write it with --plotlyjs cdn.</p>\");return;}"
            f"var b=Uint8Array.from(atob('{packed}'),function(c){{return c.charCodeAt(0);}});"
            "new Response(new Blob([b]).stream().pipeThrough(new DecompressionStream('gzip'))).text().then(function(js){"
            "var s=document.createElement('script');s.text=js;document.head.appendChild(s);lpRun();});});</script>")


def _deferred(figure_html: str) -> str:
    """A figure's HTML (plotly's to_html without plotly.js) with its script left for the loader."""
    return re.sub(r'<script(?: type="text/javascript")?>', f'<script type="{DEFERRED}">', figure_html)


def render_report(data: StudyData, storage_url: str, threshold: float | None = None, bins: int | None = None,
                  picked: tuple[str, list] | None = None, plotlyjs: str = "inline") -> str:
    """The whole report as one HTML document (plotly.js gzipped inside: no network needed to open it;
    or from the CDN: see the module's docstring); `picked`: a last section, "Picked runs" ((title,
    items) as report_sections gives them)."""

    trials = data.trials
    counts = A.state_counts(trials)
    from lpstudy.results.answers import study_rope
    from lpstudy.results.pages import PageInputs

    memo: dict = {}  # the verdicts, computed once for the header's best and the sections
    inputs = PageInputs(data, threshold=threshold, rope=study_rope(data.info.spec), keep=_kept(memo))
    best = study_best(data, inputs.answer if len(trials) and inputs.folded else None)  # the one best (results.reading.measured)
    problem = A.data_problem(trials, data.name)
    facts = [f"storage {html.escape(redact(storage_url))}", f"kind {html.escape(data.info.kind)}",
             f"preset {html.escape(str(data.info.preset))}",
             ", ".join(f"{n} {s.lower()}" for s, n in counts.items() if n)]
    if best is not None:
        row = best.row
        facts.append(f"{html.escape(best.title().lower())}: {html.escape(best.line())}; exported: trial {best.number}, "
                     f"p = {A.format_p(row['p'])}, lr = {row['lr']:.3g}, gain₀ = {row['gain_init']:.3g}")
    parts = [f"<h1>lpstudy report: {html.escape(data.name)}</h1>",
             f"<p class='facts'>{' · '.join(facts)}</p>",
             f"<p class='facts'>written {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}</p>"]
    if problem:
        parts.append(f"<p class='problem'>{html.escape(problem)}</p>")
    if data.curve_note:
        parts.append(f"<p class='facts'>{html.escape(data.curve_note)}</p>")
    nav = []
    for number, (title, items) in enumerate([*report_sections(data, threshold, bins, memo), *([picked] if picked else [])]):
        anchor = f"s{number}"
        nav.append(f"<a href='#{anchor}'>{html.escape(title)}</a>")
        parts.append(f"<h2 id='{anchor}'>{html.escape(title)}</h2><div class='grid'>")
        for item in items:
            if isinstance(item, str):  # what the study lets the reader conclude, in words
                parts.append(f"<div class='cell wide'><p class='answer'>{html.escape(item)}</p></div>")
            elif isinstance(item, pd.DataFrame):
                parts.append(f"<div class='cell wide'>{_table(item)}</div>")
            else:
                parts.append("<div class='cell'>" + _deferred(item.to_html(
                    full_html=False, include_plotlyjs=False, default_width="100%",
                    config={"displaylogo": False, "responsive": True})) + "</div>")
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
            f"{plotly_loader(plotlyjs)}</head><body>"
            f"<nav>{''.join(nav)}</nav>{''.join(parts)}</body></html>")


def write_report(reader: TrialReader, study_name: str, output: str | Path, threshold: float | None = None,
                 bins: int | None = None, trials: list[int] | None = None, plotlyjs: str = "inline") -> Path:
    """Load the study (read-only; a comparison through its arms, as the pages read it), render it and
    write the HTML atomically; the path written. `trials`: trial numbers picked to compare (their
    curves overlaid, their configurations side by side: lpstudy.results.picked_runs), a last section."""
    from lpstudy.results.reading.compare import verdict_data
    from lpstudy.results.reading.frames import trial_curves
    from lpstudy.results.picked_runs import picked_section

    data = verdict_data(reader, study_name)
    picked = None
    if trials:
        picked = ("Picked runs", picked_section(data, trials, lambda numbers: trial_curves(reader, study_name, numbers)))
    text = render_report(data, reader.url, threshold, bins, picked, plotlyjs)
    return atomic_write_text(output, text)


__all__ = ["render_report", "report_sections", "write_report", "default_threshold"]
