"""Effect of p: final validation loss against p, its mean and 95 % interval per p, the
p × learning-rate map, parameter importance, and (replicate and grid studies run on folds) the
verdict of each p against a reference (lpstudy.results.answers: the same table as `lpstudy verdict`
and the report), with a ROPE control, the folds that would decide, and p's measured share within folds."""

import math

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C
from lpstudy.results import verdict_charts as V
from lpstudy.results.answers import DEFAULT_ROPE, AnswerOptions, study_answer
from lpstudy.results.verdict_table import sequential_lines, verdict_frame, verdict_title


from common import cached_importance, chart, importance_key, once, p_bins_control, page, show_problem
from tables import table

storage, study = page("Effect of p", curves=False)
trials = study.trials
show_problem(trials)
bins = p_bins_control(trials, key="effect_bins")

summary = once(study, ("per_p_summary", bins), lambda: A.per_p_summary(trials, bins))
by = once(study, ("map_axis",), lambda: A.map_axis(trials)) or "lr"  # p × lr; p × fold for a grid at one lr
key = importance_key(trials)
tuned = study.info.kind == "search"  # a search tunes lr and gain: what each p reaches at its best
has_folds = once(study, ("has_folds",), lambda: trials["fold"].nunique() > 1 and A.finished(trials)["p"].nunique() > 1)
folded = study.info.kind == "replicate" or has_folds  # verdicts per p, fold as a block
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
profile = once(study, ("tuned_profile_frame", bins), lambda: A.tuned_profile(trials, bins)) if tuned else None
drawn = [("loss_vs_p", lambda: C.loss_vs_p(trials)),
         *([(("tuned_profile", bins), lambda: C.tuned_profile_chart(profile))] if tuned else []),
         (("mean_per_p", bins), lambda: C.mean_loss_per_p(summary)),
         (("loss_map", bins, by), lambda: C.loss_map(A.p_map(trials, bins, by=by), by)),
         *([] if folded else [("importance", lambda: C.importance_chart(cached_importance(storage, study.name, key)))])]
for row in range(0, len(drawn), 2):  # two charts a row, the scatter and the tuned profile side by side
    for column, (name, build) in zip(st.columns(2), drawn[row:row + 2]):
        with column:
            name = name if isinstance(name, tuple) else (name,)
            chart(once(study, name, build), key=name[0])

with st.expander("Numbers per p"):
    table(summary.drop(columns=["p", "p_low", "p_high"]))
    if profile is not None and len(profile):
        st.caption("The tuned profile: per p group, the best run and the mean of the lowest losses.")
        table(profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
