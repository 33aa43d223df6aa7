"""What every page of the Streamlit dashboard shares: where the database is, the study chooser
(drawn once by dashboard.py), cached read-only loaders, and the messages shown instead of charts
when there is nothing to show. The pages in views/ stay thin: they call lpstudy.results.analysis
and lpstudy.results.charts on what this loads.

The storage URL comes from `--storage URL` (or `--storage-file FILE`) after
`streamlit run app/dashboard.py --`, else $LPSTUDY_STORAGE (what `lpstudy dashboard` sets), else
lpstudy.db.urls.DEFAULT_STORAGE, read once per server process (server_reader), which opens the one
reader every page gets. It is never put in the page or its URL (it may hold a password); the page
shows it redacted.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import quote

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lpstudy.errors import UserError
from lpstudy.db.urls import redact, storage_url
from lpstudy.names import closest_study_names, no_such_study
from tables import static_table

if TYPE_CHECKING:
    from lpstudy.design.spec import StudySpec

CACHE_TTL_S = 5  # seconds: the refresh period of a live page, and of storages without a fingerprint
FINGERPRINT_TTL_S = 2  # seconds between the cheap checks whether a study's data changed
STUDY_TTL_S = 120  # a study's data is kept this long at most, even if its fingerprint did not change
STUDY_KEY = "lpstudy_study"  # session state: the chosen study, kept across pages
STUDY_ENV = "LPSTUDY_DASHBOARD_STUDY"  # a study to open first (`lpstudy dashboard --study`)


def storage_from_environment(argv: list[str]) -> str:
    """The storage URL: --storage URL or --storage-file FILE among the script's arguments (what
    Streamlit passes after `streamlit run app/dashboard.py --`; others are left to Streamlit), else
    $LPSTUDY_STORAGE, $LPSTUDY_STORAGE_FILE or the default file (lpstudy.db.urls.storage_url). Read
    once per server process, by server_reader: a page asks server_reader, never this."""
    return _storage_url_of(argv)


def _storage_url_of(argv: list[str]) -> str:
    parser = argparse.ArgumentParser(prog="app/dashboard.py", add_help=False, allow_abbrev=False,
                                     exit_on_error=False)
    parser.add_argument("--storage")
    parser.add_argument("--storage-file")
    try:
        given, _ = parser.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise UserError(f"the dashboard's arguments: {exc}") from None
    return storage_url(given.storage, given.storage_file)


_SERVER_READERS: dict[tuple, object] = {}  # the server's reader, by what it was opened from (server_reader)
_BY_URL: dict[str, object] = {}
_OPENING = threading.Lock()


def server_reader():
    """The server's one reader of the database (lpstudy.db.trial_reader), opened the first time a
    page (or the read-ahead) asks, from the script's arguments or the environment
    (storage_from_environment), and from then on handed to every loader, page and session of this
    process: the arguments are not parsed, nor a --storage-file read, nor an engine made again.
    (Kept by what it was opened from, so that a test that runs the app in its own process with another
    database gets that one.)"""
    opened_from = (tuple(sys.argv[1:]), os.environ.get("LPSTUDY_STORAGE"), os.environ.get("LPSTUDY_STORAGE_FILE"))
    found = _SERVER_READERS.get(opened_from)
    if found is not None:
        return found
    with _OPENING:
        found = _SERVER_READERS.get(opened_from)
        if found is None:
            from lpstudy.db.kinds import open_reader

            url = _storage_url_of(sys.argv[1:])
            found = _BY_URL.get(url) or open_reader(url)
            _SERVER_READERS[opened_from] = _BY_URL[url] = found
        return found


def reader(storage_url: str):
    """The server's reader of the database at storage_url (server_reader's URL, which the pages pass
    as their caches' key): the one opened for this process, never a second one."""
    found = _BY_URL.get(storage_url)
    if found is not None:
        return found
    with _OPENING:
        if storage_url not in _BY_URL:
            from lpstudy.db.kinds import open_reader

            _BY_URL[storage_url] = open_reader(storage_url)
        return _BY_URL[storage_url]


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def cached_study_infos(storage_url: str):
    from lpstudy.results.reading.frames import study_infos

    return study_infos(reader(storage_url))


@st.cache_data(ttl=FINGERPRINT_TTL_S, show_spinner=False)
def cached_fingerprint(storage_url: str, study_name: str):
    """What identifies the study's current data (lpstudy.results.reading.frames.study_fingerprint: a few counts on
    SQL databases; a comparison's, with its arms' studies'); on other storages the current CACHE_TTL_S
    time slot, so they reread on a timer."""
    import time

    from lpstudy.results.reading.frames import study_fingerprint

    from lpstudy.names import arm_study_names

    kinds = {info.name: info.kind for info in cached_study_infos(storage_url)}
    names = [study_name, *arm_study_names(study_name, kinds)] if kinds.get(study_name) == "compare" else [study_name]
    parts = [study_fingerprint(reader(storage_url), name) for name in names]  # a comparison: its arms' too
    if any(part is None for part in parts):
        return ("slot", int(time.time() // CACHE_TTL_S))
    return parts[0] if len(parts) == 1 else tuple(parts)


@st.cache_resource(max_entries=8, show_spinner=False)
def live_study(storage_url: str, study_name: str):
    """The server's one copy of the study (lpstudy.results.reading.live_study): read fully once, then only
    its unfinished and new trials whenever its fingerprint changes."""
    from lpstudy.results.reading.live_study import LiveStudy

    return LiveStudy(reader(storage_url), study_name)


@st.cache_resource(ttl=STUDY_TTL_S, max_entries=8, show_spinner=False)  # the spinner: cached_study
def _cached_study_version(storage_url: str, study_name: str, curves: bool, fingerprint):
    """One StudyData per study version, shared by every page and session without a copy (cache_data
    unpickled a copy at each page: 0.3–0.7 s at 100,000 trials). Pages only read it: pandas'
    copy-on-write keeps every frame derived from it apart, and no page assigns into it."""
    return live_study(storage_url, study_name).read(curves)


def cached_study(storage_url: str, study_name: str, curves: bool = True):
    """The study (lpstudy.results.reading.frames.StudyData), read again only when its data changed; curves=False
    for pages that need only the trials (quicker to read, and to copy out of the cache). A page shows
    "Reading the study…" while it waits for a read (Streamlit's spinner appears after half a second:
    never for a study already read); the read-ahead thread (read_ahead.py) has no page to show it on,
    and Streamlit warns of a missing ScriptRunContext where a spinner is drawn from such a thread."""
    fingerprint = cached_fingerprint(storage_url, study_name)
    if get_script_run_ctx(suppress_warning=True) is None:
        return _cached_study_version(storage_url, study_name, curves, fingerprint)
    with st.spinner("Reading the study…"):
        return _cached_study_version(storage_url, study_name, curves, fingerprint)


def once(study, key: tuple, build):
    """build(), computed once per version of the study and `key` (a chart's name and the settings it
    depends on: p bins, threshold), then shared by every page visit and session until the study
    changes. A revisit of an unchanged 100,000-trial study draws its charts instead of computing them
    again over every trial (0.3–0.8 s a page). `study` is the shared copy of one version
    (cached_study); what is built goes with it. Like the study, what is built is only read."""
    if key not in study.derived:
        study.derived[key] = build()
    return study.derived[key]


@st.cache_data(ttl=60, show_spinner=False)
def cached_importance(storage_url: str, study_name: str, trials_key: tuple):
    """Parameter importance, recomputed when the set of completed trials changes (in a big study
    over an even sample of the completed trials: lpstudy.results.analysis.curve_sample.importance_sample)."""
    from lpstudy.results.analysis import param_importance
    from lpstudy.results.analysis.curve_sample import importance_sample

    study = cached_study(storage_url, study_name, curves=False)
    return param_importance(importance_sample(study.trials), study.info.spec)


def importance_key(trials) -> tuple:
    """The set of completed trials, as cached_importance is keyed: finished trials never change, so
    their count and the sum of their numbers tell the set (hashing 100,000 numbers took 0.6 s)."""
    done = trials.loc[trials["state"] == "COMPLETE", "number"]
    return (len(done), int(done.sum()))


def plain(text: object) -> str:
    """text as a markdown element shows it literally (a study name, an error message): every ASCII
    punctuation character backslash-escaped (CommonMark escapes any of them), control characters
    written as escapes. Markdown in a name never becomes a link, bold text or a colour."""
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", shown)


@contextmanager
def no_traceback():
    """Show a failure as one message on the page, never as a traceback."""
    try:
        yield
    except UserError as exc:
        st.error(plain(exc))
        st.stop()
    except Exception as exc:  # noqa: BLE001 - the page must not show a traceback
        st.error(f"The dashboard could not draw this page: {type(exc).__name__}: {exc}")
        st.stop()


def study_chooser(title: str) -> None:
    """The frame of every page, drawn once by dashboard.py: the database (redacted) and the study
    chooser in the sidebar. Stops the page with a message when the database holds no study."""
    with no_traceback():
        storage = server_reader().url
    st.sidebar.caption(f"Database: {plain(redact(storage))} (read-only)")
    with no_traceback():
        infos = cached_study_infos(storage)
    if not infos:
        st.title(title)
        st.info("This database holds no study yet. Run one with `lpstudy search --preset smoke` (or make one "
                "with `lpstudy create` or `lpstudy replicate` and start workers); it shows up here by itself.")
        st.stop()
    names = [info.name for info in infos]
    wanted = st.session_state.get(STUDY_KEY) or st.query_params.get("study") or os.environ.get(STUDY_ENV)
    missing = wanted if wanted and wanted not in names else None  # a mistyped ?study= or --study
    index = None if missing else names.index(wanted) if wanted in names else 0
    by_name = {info.name: info for info in infos}
    name = st.sidebar.selectbox("Study", names, index=index, format_func=lambda n: study_label(by_name[n]),
                                placeholder="Choose a study",
                                help="Each study with its number of trials (a comparison: its arms' trials); under it the "
                                     "chosen study's kind and its best as the Home page shows it.")
    if name is None:
        st.title(title)
        st.error(plain(no_such_study(missing or "", redact(storage), names)))
        close = closest_study_names(missing or "", names)
        if close:
            st.markdown("Open " + " or ".join(f"[{plain(c)}](?study={quote(c)})" for c in close)
                        + ", or choose a study in the sidebar.")
        st.stop()
    st.sidebar.caption(plain(study_caption(by_name[name])))
    st.session_state[STUDY_KEY] = name
    if st.query_params.get("study") != name:
        st.query_params["study"] = name


# Every page of a synthetic study (lpstudy.study.synthetic) says so, under its title.
SYNTHETIC_BANNER = ("A synthetic study: its curves were made up by `python -m lpstudy.study.synthetic` to show the "
                    "pages; no training run stands behind its losses.")


def page(title: str, curves: bool = True):
    """The chosen study's data (without learning curves unless `curves`) under the page's title.
    Returns (storage_url, study): the server's reader's URL, the key of the pages' caches."""
    storage = server_reader().url
    with no_traceback():
        study = cached_study(storage, st.session_state[STUDY_KEY], curves)
    from lpstudy.results.reading.measured import study_best

    best = once(study, ("study_best_cell",), lambda: study_best(study))
    if best is not None:  # the one best, as Home shows it (its verdict there)
        st.sidebar.caption(plain(f"{best.title()}: {best.cell()}"))
    st.title(title)
    if study.info.synthetic:
        st.warning(SYNTHETIC_BANNER, icon=":material/science:")
    if curves and study.curve_note:
        st.caption(study.curve_note)
    return storage, study


@st.cache_data(ttl=STUDY_TTL_S, max_entries=64, show_spinner=False)
def _cached_trial_curves(storage_url: str, study_name: str, number: int, fingerprint):
    from lpstudy.results.reading.frames import trial_curves

    return trial_curves(reader(storage_url), study_name, [number])


def cached_trial_curves(storage_url: str, study_name: str, number: int):
    """One trial's curves (lpstudy.results.reading.frames.trial_curves), read again when the study changed."""
    return _cached_trial_curves(storage_url, study_name, number, cached_fingerprint(storage_url, study_name))


def study_label(info) -> str:
    """A study as the chooser lists it, short enough for the sidebar: "lp-search · 10,000 trials"
    (the kind in brackets where it is not a search: "matched (replicate) · 12 trials")."""
    label = info.name if info.kind == "search" else f"{info.name} ({info.kind})"
    if info.n_trials is not None:
        label += f" · {info.n_trials:,} trial{'' if info.n_trials == 1 else 's'}"
    return label


def study_caption(info) -> str:
    """What the chooser says under the chosen study: "search · 10,000 trials". Its best is the page's
    to say (page: lpstudy.results.reading.measured.StudyBest, as Home shows it), not one trial's value."""
    parts = [info.kind]
    if info.n_trials is not None:
        parts.append(f"{info.n_trials:,} trial{'' if info.n_trials == 1 else 's'}")
    return " · ".join(parts)


def show_problem(trials, stop: bool = True) -> bool:
    """When the study has nothing to chart (no trials, none completed, every run diverged), say so
    (info, or a warning when every run diverged); stop the page if `stop`. True when there was a problem."""
    from lpstudy.results.analysis import data_problem, successful

    problem = data_problem(trials, st.session_state[STUDY_KEY])
    if problem is None:
        return False
    if len(trials) and (trials["state"] == "COMPLETE").any() and successful(trials).empty:
        st.warning(problem)
    else:
        st.info(problem)
    if stop:
        st.stop()
    return True


# The characters of a chart title's line: whole in a chart of one of two columns (262 px at a
# 1000-pixel window with the sidebar open), and in one across the page (540 px there).
HALF_TITLE_CHARS, WIDE_TITLE_CHARS = 34, 72
# A caption's line under the plot, which starts at the plot's left edge (past the y axis's labels)
HALF_CAPTION_CHARS, WIDE_CAPTION_CHARS = 30, 68
HALF_PX, WIDE_PX = 262, 540  # those charts' widths there, the narrowest a page is read at
TITLE_LINE_PX = 20  # what each further line of a title, or of a legend above the plot, adds on top
LEGEND_CHAR_PX, LEGEND_ITEM_PX = 7, 40  # a legend entry's width: its name's characters and its symbol


def _legend_rows(fig, width_px: int) -> int:
    """The rows a horizontal legend above the plot takes in a chart `width_px` wide (its entries'
    names as Plotly lays them out, left to right); 0 for a legend elsewhere or none."""
    legend = fig.layout.legend
    if fig.layout.showlegend is False or legend.orientation != "h" or (legend.y is not None and legend.y < 1):
        return 0
    shown = [getattr(t, "showlegend", None) for t in fig.data]  # a parallel-coordinates trace has no legend
    names = [t.name for t, on in zip(fig.data, shown) if on is not False and getattr(t, "name", None)]
    if len(names) < 2 and not any(shown):
        return 0
    margin = fig.layout.margin
    width_px -= (margin.l if margin.l is not None else 80) + (margin.r if margin.r is not None else 80)  # the plot's
    rows, used = 1, 0
    for name in names:
        wide = LEGEND_CHAR_PX * len(name) + LEGEND_ITEM_PX
        if used and used + wide > width_px:
            rows, used = rows + 1, 0
        used += wide
    return rows


def fitted_title(fig, chars: int, width_px: int):
    """The figure with its title wrapped between words into lines of at most `chars` characters, and
    its top margin grown by each further line of the title and of a legend above the plot, in a chart
    `width_px` wide, so that neither covers the other (a copy: a cached figure stays as it was); each
    title line but the last ends in a space, so that the drawn title reads as one text."""
    import textwrap

    import plotly.graph_objects as go

    text = fig.layout.title.text or ""
    lines = textwrap.wrap(text, chars, break_on_hyphens=False) or [text]
    more = TITLE_LINE_PX * (len(lines) - 1 + max(_legend_rows(fig, width_px) - 1, 0))
    if not more:
        return fig
    fig = go.Figure(fig)
    fig.update_layout(title_text=" <br>".join(lines), margin_t=(fig.layout.margin.t or 60) + more,
                      height=(fig.layout.height or 450) + more,  # the title at the top, the legend's rows under it
                      title_yref="container", title_y=1, title_yanchor="top", title_pad_t=12)
    return fig


def chart(fig, key: str | None = None, note: str | None = None, half: bool = False) -> None:
    """A figure across its column (half: one of two in a row), its title wrapped to the column's
    width; `note` (a curve sample: lpstudy.results.analysis.curve_sample) is written on it."""
    if note:
        import plotly.graph_objects as go

        from lpstudy.results.charts.look import mark_sample

        fig = mark_sample(go.Figure(fig), note)  # a copy: the figure may be a page's cached one
    fig = fitted_title(fig, *((HALF_TITLE_CHARS, HALF_PX) if half else (WIDE_TITLE_CHARS, WIDE_PX)))
    from lpstudy.results.charts.look import fitted_caption

    fig = fitted_caption(fig, HALF_CAPTION_CHARS if half else WIDE_CAPTION_CHARS)
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False})


def p_bins_control(trials, key: str, spec: StudySpec | None = None):
    """The p-grouping control (sidebar): a "p bins" slider on every page that groups p, set to
    the bins that follow the spread phase (lpstudy.results.analysis.default_p_bins), over the p range
    the study's spec searches (the same groups on every chart of a page); where the exact p values
    fit (a grid), they are the default and the slider applies once "Bin p" is switched on."""
    import numpy as np

    from lpstudy.results.analysis import DEFAULT_P_BINS, default_p_bins, page_p_groups

    p = trials["p"].dropna() if "p" in trials else trials.iloc[0:0]
    if int(np.isfinite(p.unique()).sum()) < 2:
        return None
    default = default_p_bins(p)
    exact = False
    if default is None:
        exact = not st.sidebar.toggle("Bin p", value=False, key=f"{key}_on",
                                      help="The exact p values fit on the axis; switch on to group them into bins.")
    bins = st.sidebar.slider("p bins", min_value=2, max_value=20, value=default or DEFAULT_P_BINS, key=key,
                             disabled=exact, help="Equal-width bins over the searched p range; ∞ is a group of its own.")
    return None if exact else page_p_groups(trials, bins, spec)


def readable(frame, formats: dict[str, str] | None = None):
    """A table for a person: numbers with a sensible number of digits, missing values as "–" (never
    None, NaN or NaT), durations as "2 min 54 s", p as 3.5 or ∞. Every column becomes text."""
    import math

    import pandas as pd

    from lpstudy.values import format_p

    formats = formats or {}

    def cell(column: str, value) -> str:
        if value is None or (not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value)):
            return "–"
        if column in formats and isinstance(value, (int, float)) and not isinstance(value, bool):
            return format(value, formats[column])
        if column == "p" and isinstance(value, float):
            return format_p(value)
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float):
            if math.isinf(value):
                return "∞" if value > 0 else "−∞"
            return f"{value:.0f}" if value.is_integer() and abs(value) < 1e9 else f"{value:.4g}"
        if isinstance(value, pd.Timestamp):
            return value.strftime("%Y-%m-%d %H:%M:%S")
        return str(value)

    return pd.DataFrame({c: [cell(c, v) for v in frame[c]] for c in frame.columns}, index=frame.index)


def page_inputs(study, storage_url: str | None = None, **choices):
    """The study and the page's choices (lpstudy.results.pages.PageInputs), what the charts share kept
    with the study's version (once); parameter importance from its cache (cached_importance)."""
    from lpstudy.results.pages import PageInputs

    importance = None
    if storage_url is not None:
        importance = lambda: cached_importance(storage_url, study.name, importance_key(study.trials))  # noqa: E731
    return PageInputs(study, keep=lambda key, build: once(study, key, build), importance=importance, **choices)


def draw_charts(page_charts, inputs, part: str | None = None) -> None:
    """The page's charts declared in lpstudy.results.pages (those of one part, if given) that apply
    to the study, in their order: two a row, a wide one across the page."""
    from lpstudy.results.pages import applying, figure

    row: list = []

    def flush():
        if not row:
            return
        for column, entry in zip(st.columns(2), row):
            with column:
                chart(figure(entry, inputs), key=entry.name, half=True)
        row.clear()

    for entry in applying(page_charts, inputs, part):
        if entry.wide:
            flush()
            chart(figure(entry, inputs), key=entry.name)
        else:
            row.append(entry)
            if len(row) == 2:
                flush()
    flush()


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def cached_notes(storage_url: str, study_name: str):
    """The study's notes and its trials' (lpstudy.results.reading.notes), read again every CACHE_TTL_S."""
    from lpstudy.results.reading.notes import study_notes

    return study_notes(reader(storage_url), study_name)


def notes_box(storage_url: str, study_name: str, trial: int | None = None) -> None:
    """The study's note (or trial `trial`'s), its Markdown rendered, and how to write one: the pages
    only read notes (`lpstudy note` writes them, where optuna-dashboard keeps and shows them too)."""
    from lpstudy.errors import UserError
    from lpstudy.names import shell_quoted

    try:
        notes = cached_notes(storage_url, study_name)
    except UserError as exc:
        st.caption(plain(str(exc)))
        return
    body = notes.study if trial is None else notes.trials.get(trial, "")
    command = f"lpstudy note --study {shell_quoted(study_name)}" + (f" --trial {trial}" if trial is not None else "")
    if body.strip():
        with st.container(border=True):
            st.markdown(body)
    what = "this trial" if trial is not None else "the study"
    st.caption(f"{'Note on' if body.strip() else 'No note on'} {what}. `{command} \"text\"` writes one (Markdown); "
               "optuna-dashboard shows the same notes.")


# the verdict table's columns a reader hovers for the word behind them (lpstudy.results.tables.glossary)
def verdict_table(frame) -> None:
    """A verdict table (lpstudy.results.tables.verdicts), every column `lpstudy verdict` prints, as a
    static table that fits the page's width, and the glossary of its words under it."""
    static_table(frame)
    glossary_box()


def glossary_box() -> None:
    """The statistical words of the verdicts, one plain line each (ROPE, TOST, Holm, corrected t, ω², Kaplan–Meier)."""
    from lpstudy.results.tables.glossary import GLOSSARY, glossary_markdown

    with st.expander("What the words mean: " + ", ".join(GLOSSARY)):
        st.markdown(glossary_markdown())
