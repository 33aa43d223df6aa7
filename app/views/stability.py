"""Stability: divergence rate per p and over the p × learning-rate map, the largest gradient norm
against p, the attention gain's trajectory per p, and the spread across folds or seeds per p; on a
replicate or grid run on folds, each p's divergence rate against the reference's (Wilson interval,
Fisher's exact test, Holm: lpstudy.results.answers, as `lpstudy verdict --json` gives it)."""

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results.pages import STABILITY

from common import draw_charts, once, p_bins_control, page, page_inputs, show_problem
from tables import table

storage, study = page("Stability")
trials = study.trials
if trials.empty or not (trials["state"] == "COMPLETE").any():
    show_problem(trials)
show_problem(trials, stop=False)  # every run diverged: say so, and still show where and how
bins = p_bins_control(trials, key="stability_bins", spec=study.info.spec)
# the verdicts against the Effect of p page's reference, p = 2 by default
inputs = page_inputs(study, storage, bins=bins, reference=st.session_state.get("reference_p", 2.0))
if inputs.mixed_groups:  # a search: its p groups mix p with the lr and gain its runs drew
    st.info(inputs.mixed_groups)
draw_charts(STABILITY, inputs)
spread = once(study, ("replicate_spread", bins), lambda: A.replicate_spread(trials, bins))
if len(spread):
    table(spread.drop(columns=["p"]))
