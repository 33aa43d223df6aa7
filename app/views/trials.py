"""Trials: a filterable table of every trial (state, p range, learning-rate range, diverged), sorted
and paged on the server (a 100,000-trial study sends one page of rows to the browser), the filtered
table as CSV; runs picked in the table (or the first of the filter) with their curves overlaid and
their configurations side by side (lpstudy.results.picked_runs, as `lpstudy report --trials`); and
one trial's detail with its curves (read for that trial only) and parameters; the running trials'
curves as their evaluations arrive (read again every few seconds, as optuna-dashboard and W&B show a
live run). A comparison's trials are its arms' replicate runs (numbered across the arms; each read
from its arm's study)."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results.charts import trials as trial_charts
from lpstudy.results.reading.frames import merge_curves

from common import CACHE_TTL_S, cached_study, cached_trial_curves, chart, notes_box, page
from tables import PICK_PX, TABLE_PX, column_width, fit_widths, static_table

PAGE_ROWS = 100
COLUMNS = {  # shown column: (label, Streamlit number format or None for text); every column fits (tables.fit_widths)
    "number": ("trial", "%d"), "state": ("state", None), "value": ("value", "%.4f"), "p": ("p", None),
    "lr": ("lr", "%.2e"), "gain_init": ("gain₀", "%.3g"), "fold": ("fold", "%d"),
    "diverged": ("diverged", None), "steps": ("steps", "%d"), "worker": ("worker", None),
    "datetime_start": ("started", None),
}  # the best validation loss, the time, and every other field: in the CSV and the trial's detail below

storage, study = page("Trials", curves=False)
trials = study.trials
if trials.empty:
    st.info(A.data_problem(trials, study.name))
    st.stop()
if study.info.kind == "compare":
    st.caption(f"A comparison: its arms' {len(trials):,} replicate runs, the runs its verdicts pair fold by fold "
               "(each arm's tuning trials are in its own study, NAME:ARM:tune, in the study chooser).")


def curves_of(numbers: list[int], of=None) -> pd.DataFrame:
    """The curves of these trials (of the trials frame `of`, the page's by default), each read for that
    trial only (a comparison's from its arm's study)."""
    of = trials if of is None else of
    parts = []
    for number in numbers:
        row = of.loc[of["number"] == number].iloc[0]
        if "arm_number" in of:  # a comparison: the run is trial arm_number of its arm's study
            read = cached_trial_curves(storage, row["study"], int(row["arm_number"]))
            parts.append(read.assign(trial_number=number))
        else:
            parts.append(cached_trial_curves(storage, study.name, number))
    return pd.concat(parts, ignore_index=True) if parts else merge_curves()

with st.container(border=True):
    present = [s for s in A.STATES if (trials["state"] == s).any()]
    # a row of its own: the chips of all five states fit there (in a quarter of the row they overflowed)
    states = st.multiselect("State", A.STATES, default=present, key="state_filter")
    c2, c3, c4 = st.columns([2, 2, 1])
    finite_p = trials["p"][np.isfinite(trials["p"])]
    p_range = None
    if len(finite_p) and finite_p.max() > finite_p.min():
        p_range = c2.slider("p range", float(finite_p.min()), float(finite_p.max()),
                            (float(finite_p.min()), float(finite_p.max())), step=0.01)
    include_inf = c2.checkbox("include p = ∞", value=True) if np.isinf(trials["p"]).any() else True
    lr = trials["lr"].dropna()
    lr_range = None
    if len(lr) and lr.max() > lr.min():
        exponents = c3.slider("learning rate range (log₁₀)", float(np.floor(np.log10(lr.min()) * 10) / 10),
                              float(np.ceil(np.log10(lr.max()) * 10) / 10),
                              (float(np.floor(np.log10(lr.min()) * 10) / 10), float(np.ceil(np.log10(lr.max()) * 10) / 10)),
                              step=0.1)
        lr_range = (10 ** exponents[0], 10 ** exponents[1])
    diverged_choice = c4.radio("Diverged", ["any", "yes", "no"], horizontal=False, key="diverged_filter")

rows = A.filter_trials(trials, states=states, p_range=p_range, lr_range=lr_range,
                       diverged={"any": None, "yes": True, "no": False}[diverged_choice], include_inf=include_inf)
if p_range is None and not include_inf:
    rows = rows[~np.isinf(rows["p"])]

c1, c2, c3 = st.columns([2, 1, 1])
order = c1.selectbox("Sort by", list(COLUMNS), format_func=lambda c: COLUMNS[c][0], key="trials_sort")
descending = c2.toggle("Descending", value=False, key="trials_descending")
pages = max(1, math.ceil(len(rows) / PAGE_ROWS))
page_number = int(c3.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, value=1, step=1,
                                  key="trials_page"))
rows = rows.sort_values([order, "number"], ascending=[not descending, True], kind="stable", na_position="last")
start = (min(page_number, pages) - 1) * PAGE_ROWS
shown = rows.iloc[start:start + PAGE_ROWS]
st.caption(f"{len(rows):,} of {len(trials):,} trials match; rows {start + 1 if len(rows) else 0:,}–"
           f"{start + len(shown):,}, sorted by {COLUMNS[order][0]}{' (descending)' if descending else ''}.")


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """The shown columns: numbers stay numbers (they sort as numbers), p and the text as text."""
    out = frame[list(COLUMNS)].copy()
    out["p"] = out["p"].map(A.format_p)
    out["diverged"] = out["diverged"].map({True: "yes", False: "no"})
    out["datetime_start"] = out["datetime_start"].dt.strftime("%m-%d %H:%M")  # the year and seconds: in the detail
    return out


shown_table = table(shown)
def shown_text(value, fmt: str | None) -> str:
    """A cell as the table shows it: a number in its column's format."""
    if fmt and isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return fmt % value
    return str(value)


widths = fit_widths({c: column_width(label, [shown_text(v, fmt) for v in shown_table[c].head(200)])
                     for c, (label, fmt) in COLUMNS.items()}, {c: label for c, (label, _) in COLUMNS.items()},
                    cut=("worker", "datetime_start"), budget=TABLE_PX - PICK_PX)  # its rows are picked: a checkbox each
config = {c: (st.column_config.NumberColumn(label, format=fmt, width=widths[c], pinned=c == "number") if fmt
              else st.column_config.TextColumn(label, width=widths[c]))
          for c, (label, fmt) in COLUMNS.items()}  # the trial's number stays in view where a narrow window scrolls
event = st.dataframe(shown_table, hide_index=True, width="stretch", column_config=config, placeholder="–",
                     on_select="rerun", selection_mode="multi-row", key="trials_table")
selected = [int(shown_table.iloc[i]["number"]) for i in event.selection.rows] if event else []


def csv_of_filtered() -> str:
    """Every filtered trial, every column but Optuna's internal trial_id, full precision."""
    return rows.drop(columns=["trial_id"]).to_csv(index=False)


st.download_button(f"Download the {len(rows):,} filtered trials (CSV)", data=csv_of_filtered,
                   file_name=f"{study.name}-trials.csv", mime="text/csv", key="trials_csv")

from lpstudy.results.picked_runs import MAX_PICKED, configurations, overlaid_curves  # noqa: E402

LIVE_EVERY_S = CACHE_TTL_S  # the running trials' curves are read again this often (the live pages' period)


@st.fragment(run_every=LIVE_EVERY_S)
def live_curves() -> None:
    """The running trials' validation curves as their evaluations arrive: the study's trials read again
    (a new copy only where its data changed), each running trial's curve read for it alone; only reads.
    The fragment alone reruns, so the table's picks and filters stay as they are."""
    now = cached_study(storage, study.name, curves=False).trials
    running = [int(n) for n in now.loc[now["state"] == "RUNNING", "number"]]
    if not running:
        st.caption("No trial is running: the curves of running trials appear here as workers evaluate them.")
        return
    shown = running[:MAX_PICKED]
    chart(overlaid_curves(curves_of(shown, now), now, shown, title="Running now"), key="live_curves")
    st.caption(f"{len(running)} trial{'s' if len(running) > 1 else ''} running"
               + (f", the first {MAX_PICKED} drawn" if len(running) > MAX_PICKED else "")
               + f"; read again every {LIVE_EVERY_S} s, each point an evaluation stored by its worker.")


st.subheader("Running now")
live_curves()

st.subheader("Picked runs")

filtered = rows["number"].tolist()
default = selected[:MAX_PICKED] or [int(n) for n in A.top_trials(rows, 3)["number"]]
picked = st.multiselect(f"Runs to compare (pick rows in the table above, or here; up to {MAX_PICKED})", filtered,
                        default=[n for n in default if n in filtered], max_selections=MAX_PICKED,
                        key=f"picked_{'_'.join(map(str, selected))}",
                        help="With no row picked in the table: the 3 best of the filtered trials.")
if picked:
    picked_curves = curves_of(picked)
    left, right = st.columns(2)
    with left:
        chart(overlaid_curves(picked_curves, trials, picked), key="picked_curves", half=True)
    with right:
        st.caption("Configurations side by side; the fields where they differ first.")
        side_by_side = configurations(trials, picked)
        if "differs" in side_by_side:  # a tick where the picked runs differ
            side_by_side["differs"] = side_by_side["differs"].map({True: "✓", False: ""})
        static_table(side_by_side)
else:
    st.caption("No run picked: pick rows in the table (the box at a row's left) or trials in the list above.")

st.subheader("One trial")
numbers = shown["number"].tolist()
if not numbers:
    st.info("No trial matches these filters.")
    st.stop()
best = A.best_trial(rows)
best_index = numbers.index(int(best["number"])) if best is not None and int(best["number"]) in numbers else 0
number = st.selectbox("Trial (of this page)", numbers, index=best_index,
                      format_func=lambda n: f"{n} · {shown.loc[shown['number'] == n, 'state'].iloc[0]}",
                      key="trial_number")
trial = trials[trials["number"] == number].iloc[0]
notes_box(storage, study.name, int(number))  # its note, as optuna-dashboard shows it (lpstudy note writes it)
curves = curves_of([int(number)])
left, right = st.columns([1, 2])
with left:
    params = {k: v for k, v in trial.items() if not (isinstance(v, float) and math.isnan(v)) and v is not None
              and not (isinstance(v, pd.Timestamp) and pd.isna(v))}
    params["p"] = A.format_p(trial["p"])
    shown_values = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in params.values()]
    static_table(pd.DataFrame({"field": list(params), "value": shown_values}))
with right:
    chart(trial_charts.trial_chart(curves, number), key="trial_curves")
    chart(trial_charts.trial_dynamics_chart(curves, number), key="trial_dynamics")
