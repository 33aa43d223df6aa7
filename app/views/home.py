"""Home: the chosen study's trials by state, the best trial, who runs what,
how far a grid has got. Run with `lpstudy dashboard --storage URL`."""

import pandas as pd
import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C

from common import CACHE_TTL_S, cached_study, chart, no_traceback, page, plain, show_problem
from tables import table
from lpstudy.values import format_duration

storage, study = page("lpstudy: how p shapes convergence and stability", curves=False)
info = study.info
st.caption(f"Study **{plain(study.name)}** · {info.kind} · preset {info.preset or '?'} · "
           f"the pages on the left show the effect of p, convergence, stability, every trial, and the export.")

live = st.toggle("Refresh while the study runs", value=False,
                 help=f"Reread the database every {CACHE_TTL_S} s and redraw this overview.")


def _fmt(value, spec: str = ".4g") -> str:
    return "–" if value is None or pd.isna(value) else format(value, spec)


@st.fragment(run_every=CACHE_TTL_S if live else None)
def overview() -> None:
    with no_traceback():
        data = cached_study(storage, study.name, curves=False)
    trials = data.trials
    counts = A.state_counts(trials)
    cols = st.columns(len(counts) + 1)
    cols[0].metric("Trials", int(counts.sum()))
    for col, (state, n) in zip(cols[1:], counts.items()):
        col.metric(state.title(), int(n))
    if trials.empty:
        st.info(A.data_problem(trials))
        return

    grid = A.grid_progress(trials, info.spec)
    if grid is not None:
        st.progress(min(1.0, grid["fraction"]),
                    text=f"Grid: {grid['done']} of {grid['n_cells']} cells done · {grid['running']} running · "
                         f"{grid['waiting']} waiting")
    if data.duplicates:
        from lpstudy.results.cells import duplicates_note

        st.warning(duplicates_note(data.duplicates))

    best = A.best_trial(trials)
    left, right = st.columns([1, 2])
    with left:
        st.subheader("Best trial")
        if best is None:
            show_problem(trials, stop=False)
        else:
            st.metric("Final validation loss", _fmt(best["loss"]), help="lowest among completed, non-diverged trials")
            st.markdown(f"Trial **{int(best['number'])}** · p = **{A.format_p(best['p'])}** · "
                        f"lr = **{_fmt(best['lr'], '.3g')}** · gain₀ = **{_fmt(best['gain_init'], '.3g')}**"
                        + (f" · fold {int(best['fold'])}" if pd.notna(best['fold']) else ""))
            diverged = int(A.finished(trials)["diverged"].sum())
            st.caption(f"{diverged} of {int(counts['COMPLETE'])} completed runs diverged.")
    with right:
        chart(C.states_chart(counts), key="states")

    st.subheader("Running now")
    running = A.running_trials(trials)
    if running.empty:
        st.caption("No trial is running.")
    else:
        shown = running.assign(since=running["since"].dt.strftime("%Y-%m-%d %H:%M:%S UTC"),
                               running_for=running["running_s"].map(format_duration))  # "2 min 54 s"
        table(shown[["number", "worker", "device", "host", "since", "running_for", "p", "lr", "gain_init", "fold",
                     "last_step", "last_val_loss"]])
    chart(C.history_chart(trials), key="history")


overview()
