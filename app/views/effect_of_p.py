"""Effect of p: for a search, what it can say about p (a sentence, p's surrogate profile with lr and
the gain held apart, the command that would decide); final validation loss against p, its mean and
95 % interval per p, the tuned profile (expected best of m runs), the p × learning-rate map,
parameter importance, and (replicate studies) the paired comparison with p = 2 across folds."""

import math

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C

from lpstudy.results.columns import signed

from common import cached_importance, chart, importance_key, once, p_bins_control, page, show_problem
from tables import table

storage, study = page("Effect of p", curves=False)
trials = study.trials
show_problem(trials)
bins = p_bins_control(trials, key="effect_bins", spec=study.info.spec)

summary = once(study, ("per_p_summary", bins), lambda: A.per_p_summary(trials, bins))
by = once(study, ("map_axis",), lambda: A.map_axis(trials)) or "lr"  # p × lr; p × fold for a grid at one lr
key = importance_key(trials)
searched = study.info.kind == "search"  # a search tunes lr and gain: p's effect with them held apart
if searched:
    from lpstudy.results.answers.search import search_effect
    from lpstudy.results.search_charts import surrogate_profile_chart

    answer = once(study, ("search_effect",), lambda: search_effect(study))
    st.info(answer["sentence"])
    if answer.get("suggest"):
        st.caption(("To confirm it" if answer["separable"] else "What would decide it") +
                   ": the p values at the tuned learning rate and gain, fold by fold (add your --storage):")
        st.code(answer["suggest"], language="bash")
profile = once(study, ("tuned_profile_frame", bins), lambda: A.tuned_profile(trials, bins)) if searched else None
drawn = [*([("surrogate_profile", lambda: surrogate_profile_chart(answer))] if searched else []),
         ("loss_vs_p", lambda: C.loss_vs_p(trials)),
         *([(("tuned_profile", bins), lambda: C.tuned_profile_chart(profile))] if searched else []),
         (("mean_per_p", bins), lambda: C.mean_loss_per_p(summary)),
         (("loss_map", bins, by), lambda: C.loss_map(A.p_map(trials, bins, by=by), by)),
         ("importance", lambda: C.importance_chart(cached_importance(storage, study.name, key)))]
for row in range(0, len(drawn), 2):  # two charts a row: p's surrogate profile beside the raw scatter
    for column, (name, build) in zip(st.columns(2), drawn[row:row + 2]):
        with column:
            name = name if isinstance(name, tuple) else (name,)
            chart(once(study, name, build), key=name[0])

has_folds = once(study, ("has_folds",), lambda: trials["fold"].nunique() > 1 and A.finished(trials)["p"].nunique() > 1)
if study.info.kind == "replicate" or has_folds:
    finite = sorted({p for p in A.finished(trials)["p"].dropna()}, key=lambda v: (math.isinf(v), v))
    default = finite.index(2.0) if 2.0 in finite else 0
    reference = st.selectbox("Reference p for the paired comparison", finite, index=default,
                             format_func=A.format_p, key="reference_p")
    paired = once(study, ("paired", reference), lambda: A.paired_comparison(trials, reference_p=reference))
    chart(once(study, ("paired_chart", reference), lambda: C.paired_chart(paired, reference)), key="paired")
    if not paired.empty:
        table(paired[["p", "n_pairs", "mean_loss", "ref_mean_loss", "mean_diff", "ci_low", "ci_high",
                      "relative_diff", "p_value"]], signed())

with st.expander("Numbers per p"):
    table(summary.drop(columns=["p", "p_low", "p_high"]))
    if profile is not None and len(profile):
        st.caption("The tuned profile: per p group, the expected best of m runs (m the smallest group's runs), "
                   "the best run, and the mean of the 3 lowest where a group holds 3.")
        table(profile.drop(columns=["p", "p_low", "p_high", "p_order"]))
