"""A search's spread phase: its first trials cover the space evenly, and none of them is pruned.

A model-based sampler's first trials are random, and a pruner stops most of them early: a short
search then holds few completed trials, bunched wherever chance put them, and nothing to say what
p does. The spread phase gives a study's first `spread_trials` trials points of a scrambled Sobol
sequence (Owen scrambling, scipy.stats.qmc.Sobol), enqueued when the study is created, one
dimension per searched field. Sobol's first 2^m points put exactly one point in each of the 2^m
equal intervals of every single dimension, so 8 spread trials over p ∈ [1, 4] land two in each
quarter of p. They run to the end (the pruners below never stop a trial marked as spread), so the
study's first trials are an unbiased sample of every field for the dashboard's per-p pictures.

How a unit coordinate u ∈ [0, 1) becomes a field's value: a range maps linearly (on a log scale
for a log range; rounded to its step); an integer range takes the integer whose cell of width one
holds the point (on a log scale for a log range, as Optuna's suggest_int(log=True) draws: from
low − ½ to high + ½); a choice takes choice ⌊u·n⌋; p's range with ∞ maps onto its parameter
`p_or_inf` (lpstudy.design.space), whose top slice, space.INF_SHARE of the axis, is ∞: one spread
trial in 8, the share every sampler draws it at. The values are Optuna parameters in the space's
own encoding, so the worker's `space.suggest` reads them back as it reads a sampled trial.

Every pruner records a spread trial's evaluations as it records any other (successive halving and
Hyperband fill their rungs inside `prune`) and then lets it go on: the first rungs hold the spread
phase's full curves.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

import optuna
from optuna.pruners import HyperbandPruner, MedianPruner, SuccessiveHalvingPruner

from lpstudy.design.space import Choice, Range, SearchSpace
from lpstudy.values import P_OR_INF_PARAM, RACE_FOLD_ATTR, json_safe

SPREAD_ATTR = "spread"  # user attribute of a spread trial: never pruned


def spread_points(space: SearchSpace, n: int, seed: int | None) -> list[dict[str, Any]]:
    """`n` points of a scrambled Sobol sequence over the searched fields, as Optuna parameters."""
    searched = [p for p in space.searched if isinstance(p, (Range, Choice))]
    if n <= 0 or not searched:
        return []
    from scipy.stats import qmc  # a second to import: only where there are points to make

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol's balance warning for n not a power of two
        units = qmc.Sobol(d=len(searched), scramble=True, seed=seed).random(n)
    return [_params(searched, row) for row in units]


def _params(searched: list[Range | Choice], row: Iterable[float]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for param, u in zip(searched, (float(x) for x in row)):
        if isinstance(param, Choice):
            params[param.name] = json_safe(param.choices[min(int(u * len(param.choices)), len(param.choices) - 1)])
            continue
        if param.with_inf:
            params[P_OR_INF_PARAM] = _in_range(param, u, high=param.stretched_high)
            continue
        params[param.name] = _in_range(param, u)
    return params


def _in_range(param: Range, u: float, high: float | None = None) -> float | int:
    low, high = param.low, param.high if high is None else high
    if param.integer and param.log:  # each integer's cell [n − ½, n + ½) on the log scale
        low, high = low - 0.5, high + 0.5
        return min(max(round(math.exp(math.log(low) + u * (math.log(high) - math.log(low)))), param.low), param.high)
    if param.integer:
        step = int(param.step or 1)
        span = int(high) - int(low)
        return int(low) + min(int(u * (span // step + 1)), span // step) * step
    if param.log:
        value = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    else:
        value = low + u * (high - low)
    if param.step is not None:
        value = low + round((value - low) / param.step) * param.step
    return min(max(value, low), high)


def enqueue_spread(study: optuna.Study, space: SearchSpace, n: int, seed: int | None) -> int:
    """Enqueue the spread phase's trials as WAITING trials (workers take them before sampling)."""
    points = spread_points(space, n, seed)
    for params in points:
        # p's effective value beside the parameters: a reader of a waiting trial needs no space to decode it
        values = {param.name: param.value_of(params) for param in space.params
                  if isinstance(param, Range) and param.with_inf}
        study.enqueue_trial(params, user_attrs={SPREAD_ATTR: True, **json_safe(values)})
    return len(points)


def is_spread(trial: optuna.trial.FrozenTrial) -> bool:
    return bool(trial.user_attrs.get(SPREAD_ATTR))


def runs_to_the_end(trial: optuna.trial.FrozenTrial) -> bool:
    """A spread trial, or a race's evaluation of a configuration on another fold
    (lpstudy.design.intensify): its final loss is what it is run for, so no pruner stops it."""
    return is_spread(trial) or trial.user_attrs.get(RACE_FOLD_ATTR) is not None


class _SpreadRunsToTheEnd:
    """A pruner that never stops a spread trial, though its base class sees (and records) it as any
    other; the others as its Optuna base class decides. Subclasses keep their Optuna class (TPE and CMA-ES look for a HyperbandPruner's brackets)."""

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        # the base class first, always: successive halving (and Hyperband through it) records the
        # trial's value at a rung inside this call, so a spread trial must pass through it too
        pruned = super().prune(study, trial)  # type: ignore[misc]
        return pruned and not runs_to_the_end(trial)


class SpreadMedianPruner(_SpreadRunsToTheEnd, MedianPruner):
    pass


class SpreadSuccessiveHalvingPruner(_SpreadRunsToTheEnd, SuccessiveHalvingPruner):
    pass


class SpreadHyperbandPruner(_SpreadRunsToTheEnd, HyperbandPruner):
    pass
