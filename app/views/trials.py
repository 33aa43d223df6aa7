"""Trials: a filterable table of every trial (state, p range, learning-rate range, diverged), and
one trial's detail with its curves and parameters."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from lpstudy.results import analysis as A
from lpstudy.results import charts as C

from common import chart, page, readable

storage, study = page("Trials")
trials, curves = study.trials, study.curves
if trials.empty:
    st.info(A.data_problem(trials))
    st.stop()

with st.container(border=True):
    present = [s for s in A.STATES if (trials["state"] == s).any()]
    # a row of its own: the chips of all five states fit there (in a quarter of the row they overflowed)
    states = st.multiselect("State", A.STATES, default=present, key="state_filter")
    c2, c3, c4 = st.columns([2, 2, 1])
    finite_p = trials["p"][np.isfinite(trials["p"])]
    p_range = None
    if len(finite_p) and finite_p.max() > finite_p.min():
        p_range = c2.slider("p range", float(finite_p.min()), float(finite_p.max()),
                            (float(finite_p.min()), float(finite_p.max())), step=0.01)
    include_inf = c2.checkbox("include p = ∞", value=True) if np.isinf(trials["p"]).any() else True
    lr = trials["lr"].dropna()
    lr_range = None
    if len(lr) and lr.max() > lr.min():
        exponents = c3.slider("learning rate range (log₁₀)", float(np.floor(np.log10(lr.min()) * 10) / 10),
                              float(np.ceil(np.log10(lr.max()) * 10) / 10),
                              (float(np.floor(np.log10(lr.min()) * 10) / 10), float(np.ceil(np.log10(lr.max()) * 10) / 10)),
                              step=0.1)
        lr_range = (10 ** exponents[0], 10 ** exponents[1])
    diverged_choice = c4.radio("Diverged", ["any", "yes", "no"], horizontal=False, key="diverged_filter")

rows = A.filter_trials(trials, states=states, p_range=p_range, lr_range=lr_range,
                       diverged={"any": None, "yes": True, "no": False}[diverged_choice], include_inf=include_inf)
if p_range is None and not include_inf:
    rows = rows[~np.isinf(rows["p"])]
st.caption(f"{len(rows)} of {len(trials)} trials")
shown = rows.assign(p=rows["p"].map(A.format_p))
columns = ["number", "state", "value", "p", "lr", "gain_init", "fold", "diverged", "diverged_step", "best_val_loss",
           "steps", "steps_to_threshold", "tokens_per_s", "wall_time_s", "device", "worker", "datetime_start"]
st.dataframe(readable(shown[columns], {"value": ".4f", "best_val_loss": ".4f", "lr": ".2e", "gain_init": ".3g",
                                       "tokens_per_s": ",.0f", "wall_time_s": ".1f"}),
             hide_index=True, width="stretch")

st.subheader("One trial")
numbers = rows["number"].tolist()
if not numbers:
    st.info("No trial matches these filters.")
    st.stop()
best = A.best_trial(rows)
default = numbers.index(int(best["number"])) if best is not None and int(best["number"]) in numbers else 0
number = st.selectbox("Trial", numbers, index=default,
                      format_func=lambda n: f"{n} · {trials.loc[trials['number'] == n, 'state'].iloc[0]}",
                      key="trial_number")
trial = trials[trials["number"] == number].iloc[0]
left, right = st.columns([1, 2])
with left:
    params = {k: v for k, v in trial.items() if not (isinstance(v, float) and math.isnan(v)) and v is not None
              and not (isinstance(v, pd.Timestamp) and pd.isna(v))}
    params["p"] = A.format_p(trial["p"])
    shown_values = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in params.values()]
    st.dataframe(pd.DataFrame({"field": list(params), "value": shown_values}),
                 hide_index=True, width="stretch", height=520)
with right:
    chart(C.trial_chart(curves, number), key="trial_curves")
    chart(C.trial_dynamics_chart(curves, number), key="trial_dynamics")
