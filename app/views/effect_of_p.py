"""Effect of p: for a search, what it can say about p (a sentence, p's surrogate profile with lr and
the gain held apart, the command that would decide); final validation loss against p, its mean and
95 % interval per p, the tuned profile (expected best of m runs), the p × learning-rate map,
parameter importance, and (replicate and grid studies run on folds) the verdict of each p against a
reference (lpstudy.results.answers: the same table as `lpstudy verdict` and the report), with a ROPE
control, the folds that would decide, and p's measured share within folds."""

import math

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.errors import UserError
from lpstudy.results.answers import parse_rope, study_rope
from lpstudy.results.pages import EFFECT_OF_P
from lpstudy.results.tables.summary import verdict_summary
from lpstudy.results.tables.verdicts import sequential_lines, stages_frame, verdict_frame, verdict_title


from common import draw_charts, p_bins_control, page, page_inputs, show_problem, verdict_table
from tables import table

storage, study = page("Effect of p", curves=False)
trials = study.trials
show_problem(trials)
bins = p_bins_control(trials, key="effect_bins", spec=study.info.spec)
inputs = page_inputs(study, storage, bins=bins)
if inputs.searched:  # a search tunes lr and gain: p's effect with them held apart
    effect = inputs.effect
    st.info(effect.sentence)
    if effect.suggest:
        st.caption(("To confirm it" if effect.separable else "What would decide it") +
                   ": the p values at the tuned learning rate and gain, fold by fold (add your --storage):")
        st.code(effect.suggest, language="bash")
if inputs.folded:  # verdicts per arm, fold as a block
    finite = sorted({p for p in A.finished(trials)["p"].dropna()}, key=lambda v: (math.isinf(v), v))
    controls = st.columns(2)
    default = finite.index(2.0) if 2.0 in finite else 0
    reference = controls[0].selectbox("Reference p", finite or [2.0], index=default, format_func=A.format_p,
                                      key="reference_p")
    ran_with = study_rope(study.info.spec)  # the one it ran with
    rope = controls[1].text_input("ROPE: equivalent within ± this many nats (or a % of the reference's mean loss, "
                                  "e.g. 0.5%)", value=str(ran_with), key="rope")
    try:
        chosen = parse_rope(rope)
    except UserError as error:
        st.error(str(error))
        chosen = ran_with
    inputs = page_inputs(study, storage, bins=bins, reference=reference, rope=chosen)
    answer = inputs.answer
    st.markdown(f"**Verdict.** {answer.sentence}")
    draw_charts(EFFECT_OF_P, inputs, part="verdicts")  # p's measured share within folds beside the verdicts
    frame = verdict_frame(answer)
    if len(frame):
        st.markdown(verdict_summary(answer))  # what was compared, what is known, what would decide it
        st.caption(verdict_title(answer))
        verdict_table(frame)  # every column in view, the glossary under it
    for line in sequential_lines(answer):
        st.caption(line)
    draw_charts(EFFECT_OF_P, inputs, part="stages")  # run --until-decided: each p's verdict at every look
    stages = stages_frame(answer)
    if len(stages):
        table(stages)
draw_charts(EFFECT_OF_P, inputs, part="")  # two a row: p's surrogate profile beside the raw scatter

with st.expander("Numbers per p"):
    table(inputs.summary.drop(columns=["p", "p_low", "p_high"]))
    profile = inputs.profile if inputs.searched else None
    if profile is not None and len(profile):
        st.caption("The tuned profile: per p group, the expected best of m runs (m the smallest group's runs among "
                   "groups of two or more; a group of one: its best found alone), "
                   "the best run, and the mean of the 3 lowest where a group holds 3.")
        table(profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
