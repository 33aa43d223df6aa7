"""Convergence of a search: how soon its runs reach a validation loss, per p group, with the runs that
never arrive counted. No verdicts: a search's runs are not paired by fold and each p group mixes p with
the learning rate and gain its runs drew (the pages say by how much: answers.mixed_groups; Effect of
p holds them apart).

Per group, the Kaplan–Meier share of its configurations that reached the threshold by each step and
the restricted mean steps to reach it within the shared budget (lpstudy.results.analysis.survival),
each configuration counted once (analysis.configurations): a leader raced on four folds is one
configuration, and its run on the first fold it ran (the tuning fold, for a raced leader) stands for
it, so that the races do not make a group look surer or sooner. A few groups (GROUPS equal-width
bins of finite p, ∞ its own), so that the chart and the sentence stay readable. The crossing step is
read as for a comparison (interpolated between the evaluations around it: analysis.convergence).
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.configurations import configuration_ids
from lpstudy.results.analysis.convergence import default_threshold, run_endpoints, shared_horizon, threshold_rule
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.searched import read_searched
from lpstudy.results.analysis.selection import finished
from lpstudy.results.analysis.survival import group_survival
from lpstudy.results.answers.answer_types import Convergence, Endpoint, GroupMean, Reach, RestrictedMean
from lpstudy.results.answers.convergence import ENDPOINTS, resolution, tokens_per_step
from lpstudy.results.answers.endpoint_verdicts import number
from lpstudy.results.answers.options import AnswerOptions
from lpstudy.results.analysis.study_data import StudyData
from lpstudy.values import json_safe

GROUPS = 3  # equal-width bins of finite p (∞ apart): a few groups, each with runs enough to read
METHOD = ("per configuration (its first run; a raced configuration counted once): the steps to the threshold, "
          "interpolated between the evaluations around the crossing, censored where a run stops short; per p group: "
          "Kaplan–Meier (Kaplan & Meier 1958) and the restricted mean steps (Royston & Parmar 2013) with a jackknife "
          "interval on the logit scale; no verdict (the groups mix p with the learning rate and gain)")


def search_convergence(data: StudyData, options: AnswerOptions = AnswerOptions(),
                       bins: int | Sequence[float] | None = GROUPS) -> Convergence | None:
    """The search answer's `convergence` part (answer_types.Convergence with no arms), None without
    curves or runs at several p."""
    trials, curves, spec = data.trials, data.curves, data.info.spec
    if curves is None or curves.empty or trials.empty or "p" not in trials:
        return None
    threshold = float(options.threshold) if options.threshold is not None else default_threshold(finished(trials),
                                                                                                 None, spec)
    horizon = shared_horizon(trials, curves)
    runs = trials[(trials["state"] != "WAITING") & trials["p"].notna()].drop_duplicates("trial_id")
    if runs["p"].nunique() < 2:
        return None
    searched = read_searched(runs, spec)
    fields = pd.DataFrame({f.name: f.values.loc[runs.index] for f in searched.fields}, index=runs.index)
    runs = runs.assign(configuration=configuration_ids(fields, searched.names()).to_numpy())
    first = runs.sort_values("number").drop_duplicates("configuration").set_index("trial_id")
    ends = run_endpoints(curves, trials[trials["trial_id"].isin(first.index)], threshold, horizon)
    if ends.empty:
        return None
    groups = p_bins(first["p"], bins)
    ordered = groups.assign(trial_id=first.index).sort_values("p_order", kind="stable").set_index("trial_id")["p_bin"]
    reach, restricted = group_survival(ends, ordered, horizon, options.alpha)
    tokens = tokens_per_step(data.info)
    means: list[RestrictedMean] = [GroupMean(field="p", value=json_safe(row["group"]), runs=int(row["runs"]), reached=int(row["reached"]),
                       censored=int(row["censored"]), rmst=number(row["rmst"]), low=number(row["low"]),
                       high=number(row["high"]), rmst_tokens=number(row["rmst"] * tokens) if tokens else None)
             for _, row in restricted.iterrows()]
    reaches = [Reach(field="p", value=json_safe(group), step=curve["step"].tolist(), reached=curve["reached"].tolist(),
                     low=curve["low"].tolist(), high=curve["high"].tolist())
               for group, curve in reach.groupby("group", sort=False)]
    configurations, counted = int(len(first)), int(len(runs))
    return Convergence(
        threshold=threshold, threshold_rule="chosen by the reader" if options.threshold is not None
        else threshold_rule(False, spec), horizon=horizon, tokens_per_step=tokens, rope={}, method=METHOD,
        endpoints={"steps_to_threshold": Endpoint(unit=ENDPOINTS["steps_to_threshold"][0],
                                                  what=ENDPOINTS["steps_to_threshold"][1])},
        arms=[], restricted_mean=means, reach=reaches,
        sentence=search_convergence_sentence(means, threshold, horizon, configurations, counted),
        resolution=resolution(ends.join(first[[]], how="inner"), curves), configurations=configurations, runs=counted)


def search_convergence_sentence(means: list[RestrictedMean], threshold: float, horizon: float, configurations: int,
                                runs: int) -> str:
    """"Convergence to 1.9 nats within 300 steps, per p group (10 configurations of 16 runs, each
    counted once): p 1–2 in 180 restricted mean steps [150, 210] (5 of 6 reached it); …"."""
    parts = [f"p {r.value} in {_figure(r.rmst)} [{_figure(r.low)}, {_figure(r.high)}] "
             f"({r.reached} of {r.runs} reached it)" for r in means]
    if not parts:
        return "No convergence to read yet: no run of the search has a learning curve."
    counted = (f"{configurations} configurations of {runs} runs, each counted once" if configurations < runs
               else f"{runs} runs")
    text = (f"Convergence to {threshold:g} nats within {horizon:g} steps, restricted mean "
            f"steps per p group ({counted}): " + "; ".join(parts) + ".")
    if not sum(r.reached for r in means):
        return text + " No run reached it: no group reaches it sooner than another."
    return text + (" The groups mix p with the learning rate and gain their runs drew: no verdict on p here "
                   "(Effect of p holds them apart).")


def _figure(value: float | None) -> str:
    return f"{math.nan if value is None else value:.0f}"
