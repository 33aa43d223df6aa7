"""Convergence: validation and training loss curves coloured by p, the median curve per p with
a band (pruned trials marked × where they stopped), the steps to reach a loss threshold (you set it) against p, and the area under the curve."""

import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C
from lpstudy.results.compute import pruned_stops
from lpstudy.results.compute_charts import mark_pruned

from common import chart, once, p_bins_control, page, show_problem

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

left, right = st.columns(2)
with left:
    chart(once(study, ("val_curves",),
               lambda: mark_pruned(C.loss_curves(curves, trials, "val_loss"), pruned_stops(curves, trials))),
          key="val_curves", note=study.curve_note)
with right:
    chart(once(study, ("train_curves",), lambda: C.loss_curves(curves, trials, "train_loss")), key="train_curves",
          note=study.curve_note)

chart(once(study, ("median_curves", bins), lambda: C.median_curves(A.curve_cohort(curves, trials, "val_loss", bins))),
      key="median_curves", note=study.curve_note)


def convergence_by_trial():
    drawn = trials[trials["number"].isin(set(curves["trial_number"]))] if study.curve_note else trials  # the sample
    return A.convergence_by_trial(curves, drawn, threshold)


convergence = once(study, ("convergence", threshold), convergence_by_trial)
left, right = st.columns(2)
with left:
    chart(once(study, ("steps_to_threshold", threshold), lambda: C.steps_to_threshold_chart(convergence, threshold)),
          key="steps_to_threshold", note=study.curve_note)
    ok = convergence[~convergence["diverged"].astype(bool)]
    if len(ok):
        st.caption(f"{int(ok['reached'].sum())} of {len(ok)} completed, non-diverged runs "
                   f"{'in the sample ' if study.curve_note else ''}reached {threshold:g}.")
with right:
    chart(once(study, ("auc", threshold), lambda: C.auc_chart(convergence)), key="auc", note=study.curve_note)
