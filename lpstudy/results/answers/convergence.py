"""Convergence as an answer: how much sooner (or later) each arm of a replicate, grid or comparison
reaches a validation loss than the reference arm, with the runs that never arrive counted.

Two endpoints per run (lpstudy.results.analysis.convergence.run_endpoints), each turned into a
verdict per arm by the engine the final loss uses (endpoint_verdicts: paired by fold, the corrected
resampled t for the folds' shared training text, TOST against the ROPE, Holm across the arms, the
same words):
- steps_to_threshold: the restricted steps to reach the threshold, min(T, horizon), per run (T
  interpolated between the two evaluations around the crossing: analysis.convergence); a run
  that never reaches it within the horizon (diverged, failed or ran out of budget) counts as the
  horizon, never as a gap, so an arm that diverges more cannot look faster. Their mean is the
  restricted mean time (Royston & Parmar 2013). ROPE: ± convergence_rope (a StepsRope: 5 % of the
  reference's mean restricted steps by default, or a number of steps).
  Read at its resolution: a run's crossing is known only to the evaluation interval Δ around it. No
  arm is "equivalent" where Δ is wider than the ROPE (the measurement cannot tell a difference inside
  the ROPE from one just outside it), where the paired differences do not vary (a quantised
  measurement that read the same everywhere: no interval to decide from), or where no run of either
  arm reached the threshold; such an arm is undecided, `unresolved` says why and
  `eval_interval_to_resolve` gives the evaluation interval that would resolve the ROPE. A pruned or FAIL run that stopped before reaching it has no
  restricted steps: it is a failed run for the engine (left out of the pairs, and its arm can be
  neither better nor equivalent: the runs that got there are not a sample of those that were made);
  a still running one is a run to come (the verdicts are an interim reading until it ends). The
  Kaplan–Meier curves (Kaplan & Meier 1958) and restricted means per arm
  (lpstudy.results.analysis.survival), which take censoring as it is, stand beside the verdict with
  each arm's censored count.
- auc: the mean validation loss over the shared steps (area under the curve / steps), in nats;
  ROPE: the final loss's (± rope nats, or a share of the reference's mean). A diverged run keeps ln V
  after it stops.
Each endpoint is one family for Holm (the arms); the two endpoints and the final loss are separate
questions, each at its own alpha. A study run --until-decided decided its stages on the final loss:
its convergence verdicts are the fixed design's over the folds it ran.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any, Hashable

import numpy as np
import pandas as pd

from lpstudy.results.analysis.convergence import (CENSOR_REASONS, default_threshold, evaluation_interval,
                                                  run_endpoints, shared_horizon, threshold_rule)
from lpstudy.results.analysis.selection import finished
from lpstudy.results.analysis.survival import group_survival
from lpstudy.results.answers.answer_types import (Convergence, ConvergenceArm, Endpoint, EndpointReference,
                                                  EndpointRope, Reach, Resolution, RestrictedMean, ToDecide)
from lpstudy.results.answers.decide import decide_sentence, decided, to_decide
from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts, number
from lpstudy.results.answers.options import AnswerOptions
from lpstudy.results.analysis.study_data import StudyData, StudyInfo
from lpstudy.values import arm_name, json_safe

ENDPOINTS = {  # name: (unit, what it is)
    "steps_to_threshold": ("steps", "restricted steps to reach the threshold within the horizon"),
    "auc": ("nats", "mean validation loss over the shared steps (area under the curve / steps)"),
}
STOPPED = ("pruned", "failed")  # runs that stopped short of their endpoint: failed runs for the engine
METHOD = ("per run: restricted steps to the threshold (never reached within the horizon: the horizon) and the area "
          "under the validation curve; paired by fold through the verdict engine (corrected resampled t, TOST, Holm "
          "across arms, each endpoint its own family); per arm: Kaplan–Meier (Kaplan & Meier 1958) and the "
          "restricted mean steps (Royston & Parmar 2013) with Greenwood's variance")


def tokens_per_step(info: StudyInfo) -> int | None:
    """batch_size × block_size of the study's runs (its preset with its fixed fields), None where the
    spec does not say (a study not made by lpstudy, or one whose arms differ in them)."""
    if info.spec is None:
        return None
    if info.compare is not None and info.compare.factor in ("batch_size", "block_size"):
        return None
    try:
        config = info.spec.base_config()
        return int(config.batch_size) * int(config.block_size)
    except Exception:  # noqa: BLE001 - an old or foreign spec: the tokens are left out, the steps stand
        return None


def _positions(trials: pd.DataFrame) -> list[str]:
    """The run positions that pair the arms: the fold, the repeat where the study repeats its CV, and the
    tuning where a comparison tuned each arm several times (compare --tunings: the verdict spans them)."""
    tuning = ["tuning"] if "tuning" in trials and trials["tuning"].fillna(0).nunique() > 1 else []
    if "repeat" in trials and trials["repeat"].fillna(0).nunique() > 1:
        return [*tuning, "repeat", "fold"]
    return [*tuning, "fold"]


def convergence_answer(data: StudyData, options: AnswerOptions, reference: Hashable, arm_column: str, field: str,
                       values: dict[Hashable, Any], k: int, stages_over: bool = False) -> Convergence:
    """The answer's `convergence` part (answer_types.Convergence). stages_over: a study run
    --until-decided whose stages are over (its verdicts read over the folds it ran, no interim)."""
    trials, spec = data.trials, data.info.spec
    done = finished(trials)
    threshold = float(options.threshold) if options.threshold is not None else \
        default_threshold(done, arm_column, spec)
    horizon = shared_horizon(trials, data.curves)
    tokens = tokens_per_step(data.info)
    made = partial(Convergence, threshold=threshold, threshold_rule="chosen by the reader"
                   if options.threshold is not None else threshold_rule(True, spec), horizon=horizon,
                   tokens_per_step=tokens, method=METHOD,
                   endpoints={name: Endpoint(unit=unit, what=what) for name, (unit, what) in ENDPOINTS.items()})
    ends = run_endpoints(data.curves, trials, threshold, horizon)
    runs = trials[trials["state"] != "WAITING"].drop_duplicates("trial_id")
    runs = runs[runs[arm_column].notna()].set_index("trial_id")[[arm_column, *_positions(trials)]]
    joined = ends.join(runs, how="inner")
    if joined.empty or reference not in set(joined[arm_column]):
        return made(rope={}, arms=[], restricted_mean=[], reach=[],
                    sentence="No convergence verdict yet: no learning curve of the reference and another arm.")
    measured = resolution(joined, data.curves)
    reached_runs = joined[joined["reached"].astype(bool)]
    if len(reached_runs) and reached_runs["at_first"].all():
        first = float(reached_runs["steps"].max())
        return made(rope={}, arms=[], restricted_mean=[], reach=[], resolution=measured,
                    sentence=f"Convergence to {threshold:g} nats is not measured: every run that reached it was "
                             f"already there at its first evaluation (step {first:g}); choose a lower --threshold.")
    def name(arm: Hashable) -> str:
        return arm_name(field, values.get(arm, arm))

    def shown(arm: Hashable) -> dict[str, Any]:
        value = json_safe(values.get(arm, arm))
        return {"field": field, "value": value, "p": value if field == "p" else None}

    arms = list(dict.fromkeys([reference, *joined[arm_column]]))
    censored = {arm: joined.loc[(joined[arm_column] == arm) & ~joined["reached"].astype(bool), "censored"]
                .value_counts().to_dict() for arm in arms}
    position = _positions(trials)
    ropes: dict[str, EndpointRope] = {}
    verdicts: list[ConvergenceArm] = []
    references: dict[str, EndpointReference] = {}
    for endpoint, (unit, _) in ENDPOINTS.items():
        column = "restricted_steps" if endpoint == "steps_to_threshold" else "auc"
        cells = joined.assign(stopped=joined["censored"].isin(STOPPED)).groupby([arm_column, *position], sort=False)
        table = cells[column].mean().unstack(position).reindex(arms)
        # a cell whose runs stopped short of giving the endpoint (pruned, FAIL): a run that counts, never a
        # gap that waits (the engine bars such an arm from better and equivalent); still running: to come
        failed = (cells["stopped"].any().unstack(position).reindex(arms).fillna(False).astype(bool) & table.isna())
        ref_mean = float(table.loc[reference].mean())
        margin = options.convergence_rope.margin(ref_mean) if endpoint == "steps_to_threshold" else \
            options.rope.margin(ref_mean)
        if not math.isfinite(margin) or not ref_mean:
            continue
        ropes[endpoint] = EndpointRope(
            relative=margin / ref_mean, absolute=margin,
            words=options.convergence_rope.words() if endpoint == "steps_to_threshold" else options.rope.words())

        def part(arm: Hashable, endpoint: str = endpoint, unit: str = unit, margin: float = margin,
                 **numbers: Any) -> ConvergenceArm:
            by = censored.get(arm, {})
            verdict = ConvergenceArm(**shown(arm), endpoint=endpoint, unit=unit, **numbers,
                                     censored=int(sum(by.values())),
                                     censored_by={reason: int(by[reason]) for reason in CENSOR_REASONS if reason in by})
            if endpoint != "steps_to_threshold":
                return verdict
            return at_resolution(verdict, margin, measured.eval_interval, reached=int(
                joined.loc[joined[arm_column].isin([arm, reference]), "reached"].sum()))

        verdicts += endpoint_verdicts(table, reference, k=k, margin=margin, options=options, failed=failed,
                                      stages_over=stages_over, part=part)
        references[endpoint] = EndpointReference(**shown(reference), mean=ref_mean,
                                                 n_folds=int(table.loc[reference].notna().sum()))
    groups = joined[arm_column]
    reach, restricted = group_survival(joined, groups, horizon, options.alpha)
    one_device = "device" in trials and trials["device"].dropna().nunique() <= 1
    restricted_mean = []
    for _, row in restricted.iterrows():
        reached = joined.loc[(groups == row["group"]) & joined["reached"].astype(bool), "seconds"]
        restricted_mean.append(RestrictedMean(
            **shown(row["group"]), runs=int(row["runs"]), reached=int(row["reached"]),
            censored=int(row["censored"]), rmst=number(row["rmst"]), low=number(row["low"]), high=number(row["high"]),
            rmst_tokens=number(row["rmst"] * tokens) if tokens else None,
            # wall seconds compare only on one kind of device: the median among the runs that reached it
            median_seconds_reached=float(reached.median()) if one_device and reached.notna().any() else None))
    reaches = [Reach(**shown(group), step=curve["step"].tolist(), reached=curve["reached"].tolist(),
                     low=curve["low"].tolist(), high=curve["high"].tolist())
               for group, curve in reach.groupby("group", sort=False)]
    plans = what_would_decide(verdicts, ropes, references, data, options, k, trials, arm_column)
    verdicts = [arm for endpoint in ENDPOINTS for arm in decided(
        [a for a in verdicts if a.endpoint == endpoint], plans.get(endpoint))]  # the endpoints' order, as before
    said = convergence_sentence(verdicts, ropes, restricted_mean, threshold, horizon, name(reference))
    for endpoint, plan in plans.items():
        said += decide_sentence(plan, k, lambda v: arm_name(field, v), lead=f"To decide the {DECIDE_WORDS[endpoint]}",
                                seeds_note=False)
    return made(rope=ropes, arms=verdicts, restricted_mean=restricted_mean, reach=reaches, sentence=said,
                resolution=measured, reference=references or None, to_decide=plans or None)


DECIDE_WORDS = {"steps_to_threshold": "steps to the threshold", "auc": "area under the curve"}


def what_would_decide(verdicts: list[ConvergenceArm], ropes: dict[str, EndpointRope],
                      references: dict[str, EndpointReference], data: StudyData, options: AnswerOptions, k: int,
                      trials: pd.DataFrame, arm_column: str) -> dict[str, ToDecide]:
    """Per endpoint with an undecided arm its evaluations can resolve: the design that would decide it
    at 80 % power, its runnable command and its time (answers.decide.to_decide, as the final loss's),
    planned on the endpoint's own differences, spread and ROPE (each such arm's folds_to_decide is that
    design's runs: answers.decide.decided). A study run --seeds S pairs a fold's seed-averaged endpoint
    (one cell a fold): the design keeps the S seeds. An arm the evaluation interval bounds (`unresolved`)
    is left to it, and an interim reading (runs still to come) to the runs it waits for."""
    seeds = 1
    if "seed" in trials and trials["seed"].notna().any():
        per_cell = trials.dropna(subset=["fold"]).groupby([arm_column, "fold"])["seed"].nunique()
        seeds = int(per_cell.max()) if len(per_cell) else 1
    repeats = int(trials["repeat"].fillna(0).nunique()) if "repeat" in trials else 1
    plans = {}
    for endpoint in ENDPOINTS:
        arms = [a for a in verdicts if a.endpoint == endpoint and not a.unresolved and not a.interim]
        rope, ref = ropes.get(endpoint), references.get(endpoint)
        if not arms or not rope or not ref:
            continue
        plan = to_decide(arms, rope.absolute, ref.value, k=k, repeats=repeats, seeds=seeds, data=data,
                         alpha=options.alpha, cell_seeds=seeds)
        if plan:
            plans[endpoint] = plan
    return plans


def resolution(joined: pd.DataFrame, curves: pd.DataFrame) -> Resolution:
    """The steps a crossing is known to: the median gap between the two evaluations around the
    crossings (the study's evaluation interval where no run crossed between two evaluations)."""
    bracketed = joined.loc[joined["reached"].astype(bool) & ~joined["at_first"].astype(bool), "resolution"].dropna()
    interval = float(bracketed.median()) if len(bracketed) else \
        evaluation_interval(curves.sort_values(["trial_id", "step"]), "trial_id") if len(curves) else math.nan
    return Resolution(eval_interval=number(interval),
                      words=f"each run's crossing is interpolated between evaluations {interval:g} steps apart and "
                            "known to that interval" if math.isfinite(interval) else "no run was evaluated twice")


def _nice_below(x: float) -> int:
    """The largest of 1, 2, 5 × 10ⁿ at or below x (at least 1): an evaluation interval to suggest."""
    if not x >= 1:
        return 1
    power = 10 ** math.floor(math.log10(x))
    return int(max(m * power for m in (1, 2, 5) if m * power <= x))


def at_resolution(arm: ConvergenceArm, margin: float, eval_interval: float | None, reached: int) -> ConvergenceArm:
    """A steps verdict read at the resolution it was measured: undecided, with `unresolved` saying
    why and `eval_interval_to_resolve` the evaluation interval that would resolve the ROPE, where no
    run of the arm or the reference reached the threshold, where the paired differences do not vary
    (no standard error: intervals.not_varying; the engine says so, here in steps and evaluations),
    or where it is "equivalent" with the evaluation interval wider than the ROPE."""
    interval = math.nan if eval_interval is None else eval_interval
    why = None
    unvaried = arm.unresolved is not None
    if not reached:
        why = "no run of this arm or the reference reached the threshold"
    elif unvaried:
        why = (f"the paired differences do not vary (every fold read {arm.diff:+g} steps, at evaluations "
               f"{interval:g} steps apart): no interval to decide from")
    elif arm.verdict == "equivalent" and math.isfinite(interval) and interval > margin:
        why = (f"the evaluations are {interval:g} steps apart, wider than the ROPE of ±{margin:.3g} steps: "
               "a difference inside the ROPE cannot be told from one outside it")
    if why is None:
        return arm
    resolve = _nice_below(margin) if reached and math.isfinite(margin) and (
        not math.isfinite(interval) or interval > margin or unvaried) else None
    return replace(arm, verdict="undecided", region="below the resolution", holds_up_to_rho=None, folds_to_decide=None,
                   decided_by="eval_interval" if resolve else None, unresolved=why, eval_interval_to_resolve=resolve)


def _percent(x: float) -> str:
    return f"{100 * x:.0f} %" if abs(x) >= 0.1 else f"{100 * x:.1f} %"


def convergence_sentence(arms: list[ConvergenceArm], ropes: dict[str, EndpointRope],
                         restricted_mean: list[RestrictedMean], threshold: float, horizon: float,
                         reference_name: str) -> str:
    """The convergence verdicts in words: "p = 3 reaches 2.05 nats 12 % sooner than p = 2 [4 %, 20 %];
    p = 4 undecided", then the area under the curve's verdicts and the censored runs."""
    steps = [a for a in arms if a.endpoint == "steps_to_threshold"]
    if not steps:
        return "No convergence verdict yet: no arm has curves paired with the reference's."
    field = steps[0].field
    parts = []
    for arm in steps:
        who = arm_name(field, arm.value)
        verdict, rel = arm.verdict, arm.rel_diff
        if verdict == "better":
            parts.append(f"{who} reaches it {_percent(-_known(rel))} sooner [{_percent(-_known(arm.rel_high))}, "
                         f"{_percent(-_known(arm.rel_low))}]")
        elif verdict == "worse":
            parts.append(f"{who} reaches it {_percent(_known(rel))} later [{_percent(_known(arm.rel_low))}, "
                         f"{_percent(_known(arm.rel_high))}]")
        elif verdict == "equivalent":
            parts.append(f"{who} reaches it as soon, within {ropes['steps_to_threshold'].words}")
        elif arm.region == "different, size undecided":  # its interval excludes 0 but reaches into the ROPE
            word = "sooner" if _known(rel) < 0 else "later"
            size = _percent(abs(_known(rel)))
            ends = sorted([_percent(abs(_known(arm.rel_low))), _percent(abs(_known(arm.rel_high)))],
                          key=lambda t: float(t[:-2]))
            parts.append(f"{who} reaches it {word} ({size} [{ends[0]}, {ends[1]}]), by how much undecided")
        elif arm.unresolved:
            to = f"; eval_interval ≤ {arm.eval_interval_to_resolve} would resolve it" \
                if arm.eval_interval_to_resolve else ""
            parts.append(f"{who} undecided ({arm.unresolved}{to})")
        elif arm.interim:
            parts.append(f"{who} undecided (interim: runs still to come)")
        else:
            parts.append(f"{who} undecided")
    text = (f"Convergence to {threshold:g} nats (steps within {horizon:g}, "
            f"against {reference_name}): " + "; ".join(parts) + ".")
    auc = [a for a in arms if a.endpoint == "auc"]
    words = {"better": "lower", "worse": "higher", "equivalent": "equivalent", "undecided": "undecided"}
    if auc:
        text += " Area under the validation curve: " + ", ".join(
            f"{arm_name(field, a.value)} {words[a.verdict]}" for a in auc) + "."
    censored = sum(r.censored for r in restricted_mean)
    if censored:
        text += (f" {censored} of {sum(r.runs for r in restricted_mean)} runs never reached it "
                 "(diverged or out of steps: counted at the horizon; pruned, failed or running: censored where they stopped).")
    return text


def _known(value: float | None) -> float:
    """A difference a verdict other than undecided always has (NaN where, against that, it has none)."""
    return math.nan if value is None else value
