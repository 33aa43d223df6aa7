"""Effect of p: for a search, what it can say about p (a sentence, p's surrogate profile with lr and
the gain held apart, the command that would decide); final validation loss against p, its mean and
95 % interval per p, the tuned profile (expected best of m runs), the p × learning-rate map,
parameter importance, and (replicate and grid studies run on folds) the verdict of each p against a
reference (lpstudy.results.answers: the same table as `lpstudy verdict` and the report), with a ROPE
control, the folds that would decide, and p's measured share within folds."""

import math

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C
from lpstudy.results import verdict_charts as V
from lpstudy.results.answers import DEFAULT_ROPE, AnswerOptions, answered_by_verdicts, has_verdicts, study_answer
from lpstudy.results.verdict_table import sequential_lines, verdict_frame, verdict_title


from common import cached_importance, chart, importance_key, once, p_bins_control, page, show_problem
from tables import table

storage, study = page("Effect of p", curves=False)
trials = study.trials
show_problem(trials)
bins = p_bins_control(trials, key="effect_bins", spec=study.info.spec)

summary = once(study, ("per_p_summary", bins), lambda: A.per_p_summary(trials, bins))
by = once(study, ("map_axis",), lambda: A.map_axis(trials)) or "lr"  # p × lr; p × fold for a grid at one lr
key = importance_key(trials)
searched = not answered_by_verdicts(study.info)  # a search tunes lr and gain: p's effect with them held apart
if searched:
    from lpstudy.results.answers.search import search_effect
    from lpstudy.results.search_charts import surrogate_profile_chart

    effect = once(study, ("search_effect",), lambda: search_effect(study))
    st.info(effect["sentence"])
    if effect.get("suggest"):
        st.caption(("To confirm it" if effect["separable"] else "What would decide it") +
                   ": the p values at the tuned learning rate and gain, fold by fold (add your --storage):")
        st.code(effect["suggest"], language="bash")
folded = once(study, ("has_verdicts",), lambda: has_verdicts(study))  # verdicts per arm, fold as a block
if folded:
    finite = sorted({p for p in A.finished(trials)["p"].dropna()}, key=lambda v: (math.isinf(v), v))
    controls = st.columns(2)
    default = finite.index(2.0) if 2.0 in finite else 0
    reference = controls[0].selectbox("Reference p", finite or [2.0], index=default, format_func=A.format_p,
                                      key="reference_p")
    rope = controls[1].number_input("ROPE: equivalent within ± this % of the reference's mean loss", min_value=0.0,
                                    max_value=20.0, value=100 * DEFAULT_ROPE, step=0.1, format="%.2f", key="rope")
    answer = once(study, ("answer", reference, rope),
                  lambda: study_answer(study, AnswerOptions(rope=rope / 100, reference=reference)))
    st.markdown(f"**Verdict.** {answer['sentence']}")
    left, right = st.columns(2)
    with left:
        chart(once(study, ("verdict_chart", reference, rope), lambda: V.verdict_chart(answer)), key="verdicts")
    with right:  # p's measured share within folds, never a 1.00 bar of the one field a replicate varies
        chart(once(study, ("fold_importance", reference, rope), lambda: V.fold_importance_chart(answer)), key="importance")
    frame = verdict_frame(answer)
    if len(frame):
        st.caption(verdict_title(answer))
        st.dataframe(frame, hide_index=True, width="stretch")
    for line in sequential_lines(answer):
        st.caption(line)
profile = once(study, ("tuned_profile_frame", bins), lambda: A.tuned_profile(trials, bins)) if searched else None
drawn = [*([("surrogate_profile", lambda: surrogate_profile_chart(effect))] if searched else []),
         ("loss_vs_p", lambda: C.loss_vs_p(trials)),
         *([(("tuned_profile", bins), lambda: C.tuned_profile_chart(profile))] if searched else []),
         (("mean_per_p", bins), lambda: C.mean_loss_per_p(summary)),
         (("loss_map", bins, by), lambda: C.loss_map(A.p_map(trials, bins, by=by), by)),
         *([] if folded else [("importance", lambda: C.importance_chart(cached_importance(storage, study.name, key)))])]
for row in range(0, len(drawn), 2):  # two charts a row: p's surrogate profile beside the raw scatter
    for column, (name, build) in zip(st.columns(2), drawn[row:row + 2]):
        with column:
            name = name if isinstance(name, tuple) else (name,)
            chart(once(study, name, build), key=name[0])

with st.expander("Numbers per p"):
    table(summary.drop(columns=["p", "p_low", "p_high"]))
    if profile is not None and len(profile):
        st.caption("The tuned profile: per p group, the expected best of m runs (m the smallest group's runs), "
                   "the best run, and the mean of the 3 lowest where a group holds 3.")
        table(profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
