"""Convergence: for a replicate or grid, each p's verdict against the reference on the steps to reach
a loss threshold and on the area under the validation curve (lpstudy.results.answers: the same as
`lpstudy verdict` and the report), and for every study the share of each p's runs that reached the
threshold by each step (Kaplan–Meier, with the runs that never get there counted); the validation and
training loss curves coloured by p, the median curve per p with a band (pruned trials marked × where
they stopped), the steps to reach the threshold (you set it) against p, and the area under the curve.
Under a search, the page says that these curves mix p with the learning rate and the gain."""

import math

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.errors import UserError
from lpstudy.results.answers import parse_rope, study_rope
from lpstudy.results.charts.convergence import SEARCH_CAVEAT
from lpstudy.results.tables.summary import convergence_summary
from lpstudy.results.tables.convergence import convergence_frame, convergence_title, restricted_frame
from lpstudy.results.pages import CONVERGENCE
from lpstudy.design.options import OPTIONS

from common import draw_charts, p_bins_control, page, page_inputs, show_problem, glossary_box
from tables import static_table

storage, study = page("Convergence")
trials, curves = study.trials, study.curves
if trials.empty or curves.empty:
    if not show_problem(trials, stop=False):
        st.info("No learning curve recorded yet; curves appear as workers evaluate.")
    st.stop()
show_problem(trials, stop=False)  # none completed, or all diverged: say so, and still show the curves there are
bins = p_bins_control(trials, key="convergence_bins", spec=study.info.spec)

opening = page_inputs(study, storage, bins=bins)
rule = A.threshold_rule(opening.folded, study.info.spec)
_, high = OPTIONS["loss_threshold"].bounds  # a study's loss threshold's rule, as report and verdict take it
threshold = st.number_input("Loss threshold (validation loss, nats)", min_value=0.001, max_value=float(high),
                            value=min(max(opening.default_threshold, 0.001), float(high)),
                            step=0.05, format="%.3f",
                            help=f"Default: {rule}. Steps to reach it are counted at each run's first evaluation at "
                                 "or below it; a run that never gets there within the shared budget counts as never, "
                                 "a pruned or running one is censored where it stopped.")
choices = {"bins": bins, "threshold": None if threshold == opening.default_threshold else threshold}  # None: the rule
if opening.folded:  # verdicts per p against a reference, as on Effect of p
    finite = sorted({p for p in A.finished(trials)["p"].dropna()}, key=lambda v: (math.isinf(v), v))
    controls = st.columns(2)
    choices["reference"] = controls[0].selectbox("Reference p", finite or [2.0], index=finite.index(2.0) if 2.0 in finite
                                                 else 0, format_func=A.format_p, key="convergence_reference_p")
    rope = controls[1].text_input("ROPE of the area under the curve (the final loss's): ± this many nats, or a % of "
                                  "the reference's", value=str(study_rope(study.info.spec)), key="convergence_rope")
    try:
        choices["rope"] = parse_rope(rope)
    except UserError as exc:  # the one line the command line gives; the study's own ROPE meanwhile
        st.warning(str(exc))
        choices["rope"] = study_rope(study.info.spec)
inputs = page_inputs(study, storage, **choices)
if inputs.folded:
    convergence = inputs.answer.convergence
    st.markdown(f"**Convergence.** {(convergence.sentence if convergence else None) or 'No curves to compare yet.'}")
elif inputs.mixed_groups:  # a search: its p groups mix p with the lr and gain its runs drew
    st.info(inputs.mixed_groups)
elif inputs.searched:
    st.info(SEARCH_CAVEAT)
draw_charts(CONVERGENCE, inputs, part="verdicts")
if inputs.folded and len(convergence_frame(inputs.answer)):
    st.markdown(convergence_summary(inputs.answer))  # what was compared, what is known, what would decide it
    st.caption(convergence_title(inputs.answer))
    static_table(convergence_frame(inputs.answer))
    st.caption("Kaplan–Meier: restricted mean steps to the threshold within the horizon (Royston & Parmar 2013)")
    static_table(restricted_frame(inputs.answer))
    glossary_box()
draw_charts(CONVERGENCE, inputs, part="")
convergence = inputs.convergence
ok = convergence[~convergence["diverged"].astype(bool)]
if len(ok):
    st.caption(f"{int(ok['reached'].sum())} of {len(ok)} completed, non-diverged runs "
               f"{'in the sample ' if study.curve_note else ''}reached {inputs.loss_threshold:g}.")
