"""Home: the chosen study's trials by state, the best trial, who runs what,
how far a grid has got. Run with `lpstudy dashboard --storage URL`."""

import pandas as pd
import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results.reading.measured import study_best
from lpstudy.results.pages import OVERVIEW

from common import (CACHE_TTL_S, cached_study, draw_charts, no_traceback, notes_box, once, page, page_inputs, plain,
                    reader, show_problem)
from tables import table
from lpstudy.values import format_duration

storage, study = page("lpstudy: how p shapes convergence and stability", curves=False)
info = study.info
st.caption(f"Study **{plain(study.name)}** · {info.kind} · preset {info.preset or '?'} · "
           f"the pages on the left show the effect of p, convergence, stability, every trial, and the export.")



def comparison_overview(storage_url: str, name: str) -> None:
    """The parent study of `lpstudy compare` has no trials of its own: its arms, the tuning budget
    they spent, the fold runs done, what is left, and the command that runs it while anything is."""
    from lpstudy.db.urls import DEFAULT_STORAGE, redact
    from lpstudy.names import shell_quoted
    from lpstudy.results.reading.compare import compare_progress, load_compare, next_command, progress_line

    with no_traceback():
        progress = compare_progress(load_compare(reader(storage_url), name))
    cols = st.columns(4)
    cols[0].metric("Arms", progress.n_arms)
    cols[1].metric("Tuning trials", f"{progress.tuning_spent} / {progress.tuning_total}",
                   help=f"{progress.budget} per arm: the equal budget")
    cols[2].metric("Fold runs", f"{progress.cells_done} / {progress.cells_total}",
                   help=f"each arm's best configuration on {progress.folds} folds")
    cols[3].metric("Left", progress.left, help="tuning trials and fold runs still to run")
    st.dataframe(pd.DataFrame([{
        "Arm": arm.arm, "Tuning trials": f"{arm.tuning_done} / {arm.budget}",
        "Fold runs": ("none: no tuning trial counts" if arm.nothing_to_replicate
                      else f"{arm.folds_done} / {arm.folds}"),
        "Left": arm.left} for arm in progress.arms]),
        hide_index=True, width="stretch")
    if progress.done:
        st.success("Every arm is tuned and replicated: the Compare page pairs them fold by fold.")
    else:
        shown = "" if storage_url == DEFAULT_STORAGE else f" --storage {shell_quoted(redact(storage_url))}"
        st.info(f"{progress_line(progress)}. Run it with `{next_command(name, shown)}` (as many workers as you like).")


if info.kind == "compare":
    comparison_overview(storage, study.name)
    st.stop()

st.subheader("Notes")
notes_box(storage, study.name)

live = st.toggle("Refresh while the study runs", value=False,
                 help=f"Reread the database every {CACHE_TTL_S} s and redraw this overview.")


def verdicts(data):
    """The study's verdicts (a replicate's, a grid's), for the best arm's verdict; None for a search."""
    from lpstudy.results.answers import study_rope

    inputs = page_inputs(data, rope=study_rope(data.info.spec))  # the verdicts the Effect of p page opens on
    return inputs.answer if inputs.folded else None


def _fmt(value, spec: str = ".4g") -> str:
    return "–" if value is None or pd.isna(value) else format(value, spec)


@st.fragment(run_every=CACHE_TTL_S if live else None)
def overview() -> None:
    data = study  # read once with the page; a live refresh (the fragment alone) reads it again
    if live:
        with no_traceback():
            data = cached_study(storage, study.name, curves=False)
    trials = data.trials
    counts = once(data, ("state_counts",), lambda: A.state_counts(trials))
    cols = st.columns(len(counts) + 1)
    cols[0].metric("Trials", int(counts.sum()))
    for col, (state, n) in zip(cols[1:], counts.items()):
        col.metric(state.title(), int(n))
    if trials.empty:
        st.info(A.data_problem(trials, study.name))
        return

    grid = once(data, ("grid_progress",), lambda: A.grid_progress(trials, info.spec))
    if grid is not None:
        st.progress(min(1.0, grid.fraction),
                    text=f"Grid: {grid.done} of {grid.n_cells} cells done · {grid.running} running · "
                         f"{grid.waiting} waiting")
    if data.duplicates:
        from lpstudy.results.analysis.cells import duplicates_note

        st.warning(duplicates_note(data.duplicates))

    answer = verdicts(data)
    if answer is not None:  # a replicate's, grid's or comparison's answer first, in one sentence
        from lpstudy.results.answers.verdicts import headline

        st.markdown(f"#### {plain(headline(answer))}")
    best = once(data, ("study_best",), lambda: study_best(data, answer))
    left, right = st.columns([1, 2])
    with left:  # the one best (results.reading.measured.StudyBest): a search's over folds, a replicate's arm
        st.subheader("Best" if best is None else best.title())
        if best is None:
            show_problem(trials, stop=False)
        else:
            row = best.row
            # the label short enough for a third of a 538-pixel column; its folds are in the heading above
            st.metric("Final validation loss", _fmt(best.mean),
                      help=(f"the mean of its final validation losses over the {best.n_folds} fold"
                            f"{'s' if best.n_folds > 1 else ''} it ran on (a fold run twice: their mean first)")
                      if best.chosen_as != "lowest" else "one run's")
            what = f"{best.arm} · " if best.arm else ""
            st.markdown(what + f"trial **{best.number}** (exported) · p = **{A.format_p(row['p'])}** · "
                        f"lr = **{_fmt(row['lr'], '.3g')}** · gain₀ = **{_fmt(row['gain_init'], '.3g')}**"
                        + (f" · fold {int(row['fold'])}: {_fmt(best.value)}" if pd.notna(row['fold']) else ""))
            (st.success if best.chosen_as == "best" else st.info if best.is_arm else st.warning)(plain(best.line()))
            diverged = once(data, ("diverged",), lambda: int(A.finished(trials)["diverged"].sum()))
            st.caption(f"{diverged} of {int(counts['COMPLETE'])} completed runs diverged.")
    with right:
        draw_charts(OVERVIEW, page_inputs(data), part="states")

    st.subheader("Running now")
    running = A.running_trials(trials)  # "running for" is counted to now: not kept
    if running.empty:
        st.caption("No trial is running.")
    else:
        shown = running.assign(running_for=running["running_s"].map(format_duration))  # "2 min 54 s"
        table(shown[["number", "worker", "running_for", "p", "lr", "gain_init", "fold", "last_step",
                     "last_val_loss"]])  # the worker names its host and device; all in view at 1400 px
    draw_charts(OVERVIEW, page_inputs(data), part="history")
    compute_section(data)


def compute_section(data) -> None:
    """Compute spent by every trial, what pruning saved, and the best value against compute."""
    from lpstudy.results.reading.compute import compute_line, compute_summary

    st.subheader("Compute")
    spent = once(data, ("compute_summary",), lambda: compute_summary(data.trials))
    cols = [*st.columns(2), *st.columns(2)]  # two by two: a duration's digits fit a narrow window's column
    cols[0].metric("Steps trained", f"{spent['steps']:,}", help="by every trial: completed, pruned, failed, running")
    cols[1].metric("Saved by pruning", f"{spent['saved_share']:.0%}",
                   help="steps pruned trials did not run, of the steps of running every trial to its end")
    cols[2].metric("CPU time", format_duration(spent["cpu_s"]))
    cols[3].metric("GPU time", format_duration(spent["gpu_s"]))
    st.caption(compute_line(spent))
    draw_charts(OVERVIEW, page_inputs(data), part="compute")


overview()
