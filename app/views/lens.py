"""The stability lens: final loss against the learning rate per p and the LR sensitivity derived
from it (Wortsman et al. 2023), the largest attention logit and the smallest head entropy over
training (logit growth; entropy collapse, Zhai et al. 2023), and the attention entropy at
initialisation against p for fixed and matched gains (lpstudy.results.analysis); on a replicate or
grid run on folds, each p's logit growth and smallest entropy against the reference's, with the
fold-corrected interval (lpstudy.results.answers)."""

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import lens_charts as L
from lpstudy.results import verdict_charts as V
from lpstudy.results.answers import AnswerOptions, has_verdicts, study_answer

from common import chart, once, p_bins_control, page, show_problem
from tables import table

storage, study = page("Stability lens")
trials, curves = study.trials, study.curves
if trials.empty or not (trials["state"] == "COMPLETE").any():
    show_problem(trials)
show_problem(trials, stop=False)  # every run diverged: say so, and still show the learning rates and logits
bins = p_bins_control(trials, key="lens_bins", spec=study.info.spec)

left, right = st.columns(2)
with left:
    chart(once(study, ("lr_curve", bins), lambda: L.lr_curve_chart(A.lr_curve(trials, bins=bins))), key="lr_curve")
with right:
    sensitivity = once(study, ("lr_sensitivity", bins), lambda: A.lr_sensitivity(trials, bins=bins))
    chart(once(study, ("lr_sensitivity_chart", bins), lambda: L.lr_sensitivity_chart(sensitivity)),
          key="lr_sensitivity")
if len(sensitivity):
    table(sensitivity.drop(columns=["p", "p_order"]).rename(columns={"mean": "lr_sensitivity"}))

left, right = st.columns(2)
with left:
    chart(once(study, ("max_logit", bins), lambda: L.max_logit_chart(A.curve_cohort(curves, trials, "max_logit", bins))),
          key="max_logit")
with right:
    chart(once(study, ("min_head_entropy", bins),
               lambda: L.min_head_entropy_chart(A.curve_cohort(curves, trials, "min_head_entropy", bins))),
          key="min_head_entropy")

folded = once(study, ("has_verdicts",), lambda: has_verdicts(study))  # verdicts per arm, fold as a block
if folded:
    reference = st.session_state.get("reference_p", 2.0)  # the Effect of p page's choice, p = 2 by default
    answer = once(study, ("answer", reference, "stability"), lambda: study_answer(study, AnswerOptions(reference=reference)))
    left, right = st.columns(2)
    for column, metric in ((left, "logit_growth"), (right, "min_entropy")):
        with column:
            chart(once(study, (f"{metric}_verdict", reference), lambda m=metric: V.stability_verdict_chart(answer, m)),
                  key=f"{metric}_verdict")

chart(once(study, ("initial_entropy",), lambda: L.initial_entropy_chart(A.initial_entropy(curves, trials))),
      key="initial_entropy")
st.caption("A comparison of p at one fixed gain compares softmax temperatures too: `gain_init: matched` "
           "starts every p at the spread of logits QKNorm's g₀ gives p = 2.")
