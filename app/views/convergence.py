"""Convergence: validation and training loss curves coloured by p, the median curve per p with
a band (pruned trials marked × where they stopped), the steps to reach a loss threshold (you set it) against p, and the area under the curve."""

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results.pages import CONVERGENCE

from common import draw_charts, once, p_bins_control, page, page_inputs, show_problem

storage, study = page("Convergence")
trials, curves = study.trials, study.curves
if trials.empty or curves.empty:
    if not show_problem(trials, stop=False):
        st.info("No learning curve recorded yet; curves appear as workers evaluate.")
    st.stop()
show_problem(trials, stop=False)  # none completed, or all diverged: say so, and still show the curves there are
bins = p_bins_control(trials, key="convergence_bins", spec=study.info.spec)

spec_threshold = study.info.spec.get("loss_threshold")
finals = once(study, ("successful_losses",), lambda: A.successful(trials)["loss"])
suggested = float(spec_threshold) if spec_threshold else (
    round(float(finals.quantile(0.75)), 2) if len(finals) else 2.0)
threshold = st.number_input("Loss threshold (validation loss)", min_value=0.0, value=suggested, step=0.05,
                            format="%.3f", help="Steps to reach it are counted at each trial's first evaluation at or below it.")

inputs = page_inputs(study, storage, bins=bins, threshold=threshold)
if inputs.mixed_groups:  # a search: its p groups mix p with the lr and gain its runs drew
    st.info(inputs.mixed_groups)
draw_charts(CONVERGENCE, inputs)
convergence = inputs.convergence
ok = convergence[~convergence["diverged"].astype(bool)]
if len(ok):
    st.caption(f"{int(ok['reached'].sum())} of {len(ok)} completed, non-diverged runs "
               f"{'in the sample ' if study.curve_note else ''}reached {threshold:g}.")
