"""Stability: divergence rate per p and over the p × learning-rate map, the largest gradient norm
against p, the attention gain's trajectory per p, and the spread across folds or seeds per p; on a
replicate or grid run on folds, each p's divergence rate against the reference's (Wilson interval,
Fisher's exact test, Holm: lpstudy.results.answers, as `lpstudy verdict --json` gives it)."""

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C
from lpstudy.results import verdict_charts as V
from lpstudy.results.answers import AnswerOptions, has_verdicts, study_answer

from common import chart, once, p_bins_control, page, show_problem
from tables import table

storage, study = page("Stability")
trials, curves = study.trials, study.curves
if trials.empty or not (trials["state"] == "COMPLETE").any():
    show_problem(trials)
show_problem(trials, stop=False)  # every run diverged: say so, and still show where and how
bins = p_bins_control(trials, key="stability_bins", spec=study.info.spec)
folded = once(study, ("has_verdicts",), lambda: has_verdicts(study))  # verdicts per arm, fold as a block
if folded:
    reference = st.session_state.get("reference_p", 2.0)  # the Effect of p page's choice, p = 2 by default
    answer = once(study, ("answer", reference, "stability"), lambda: study_answer(study, AnswerOptions(reference=reference)))
    chart(once(study, ("divergence_verdict", reference), lambda: V.stability_verdict_chart(answer, "divergence")),
          key="divergence_verdict")

left, right = st.columns(2)
with left:
    chart(once(study, ("divergence_rate", bins), lambda: C.divergence_rate_chart(A.divergence_rates(trials, bins))),
          key="divergence_rate")
with right:
    by = once(study, ("map_axis",), lambda: A.map_axis(trials)) or "lr"
    chart(once(study, ("divergence_map", bins, by), lambda: C.divergence_map(A.p_map(trials, bins, by=by), by)),
          key="divergence_map")

left, right = st.columns(2)
with left:
    chart(once(study, ("grad_norm",), lambda: C.max_grad_norm_chart(A.max_grad_norms(curves, trials))), key="grad_norm")
with right:
    chart(once(study, ("gain", bins), lambda: C.gain_chart(A.curve_cohort(
        curves, trials, "gain_mean", bins, include_diverged=A.successful(trials).empty))), key="gain")

chart(once(study, ("spread_chart", bins), lambda: C.spread_chart(trials, bins)), key="spread")
spread = once(study, ("replicate_spread", bins), lambda: A.replicate_spread(trials, bins))
if len(spread):
    table(spread.drop(columns=["p"]))
