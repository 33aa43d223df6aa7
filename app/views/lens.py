"""The stability lens: final loss against the learning rate per p and the LR sensitivity derived
from it (Wortsman et al. 2023), the largest attention logit and the smallest head entropy over
training (logit growth; entropy collapse, Zhai et al. 2023), and the attention entropy at
initialisation against p for fixed and matched gains (lpstudy.results.analysis); on a replicate or
grid run on folds, each p's logit growth and smallest entropy against the reference's, with the
fold-corrected interval (lpstudy.results.answers)."""

import streamlit as st

from lpstudy.results.pages import STABILITY_LENS

from common import draw_charts, p_bins_control, page, page_inputs, show_problem
from tables import table

storage, study = page("Stability lens")
trials = study.trials
if trials.empty or not (trials["state"] == "COMPLETE").any():
    show_problem(trials)
show_problem(trials, stop=False)  # every run diverged: say so, and still show the learning rates and logits
bins = p_bins_control(trials, key="lens_bins", spec=study.info.spec)
# the verdicts against the Effect of p page's reference, p = 2 by default
inputs = page_inputs(study, storage, bins=bins, reference=st.session_state.get("reference_p", 2.0))
if inputs.mixed_groups:  # a search: its p groups mix p with the lr and gain its runs drew
    st.info(inputs.mixed_groups)
draw_charts(STABILITY_LENS, inputs, part="learning rate")
sensitivity = inputs.sensitivity
if len(sensitivity):
    table(sensitivity.drop(columns=["p", "p_order"]).rename(columns={"mean": "lr_sensitivity"}))
draw_charts(STABILITY_LENS, inputs, part="")
st.caption("A comparison of p at one fixed gain compares softmax temperatures too: `gain_init: matched` "
           "starts every p at the spread of logits QKNorm's g₀ gives p = 2.")
