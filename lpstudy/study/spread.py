"""A search's spread phase: its first trials cover the space evenly, and none of them is pruned.

A model-based sampler's first trials are random, and a pruner stops most of them early: a short
search then holds few completed trials, bunched wherever chance put them, and nothing to say what
p does. The spread phase gives a study's first `spread_trials` trials points of a scrambled Sobol
sequence (Owen scrambling, scipy.stats.qmc.Sobol), enqueued when the study is created, one
dimension per searched field. Sobol's first 2^m points put exactly one point in each of the 2^m
equal intervals of every single dimension, so 8 spread trials over p ∈ [1, 4] land two in each
quarter of p. They run to the end (the pruners below never stop a trial marked as spread), so the
study's first trials are an unbiased sample of every field for the dashboard's per-p pictures, and
the pruner's first rungs are filled by full curves.

How a unit coordinate u ∈ [0, 1) becomes a field's value: a range maps linearly (on a log scale
for a log range; rounded to its step or to an integer); a choice takes choice ⌊u·n⌋; p's range
with ∞ gives the top 1/8 of its axis to ∞ (one spread trial in 8) and the rest linearly to the
range. The values are Optuna parameters in the space's own encoding (`p_inf` for ∞), so the
worker's `space.suggest` reads them back as it reads a sampled trial.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import optuna
from optuna.pruners import HyperbandPruner, MedianPruner, SuccessiveHalvingPruner

from lpstudy.study.space import P_INF_PARAM, Choice, Range, SearchSpace
from lpstudy.values import json_safe

SPREAD_ATTR = "spread"  # user attribute of a spread trial: never pruned
INF_SHARE = 1 / 8  # of p's axis, where p = ∞ is searched too


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


def _params(searched: list[Range | Choice], row) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for param, u in zip(searched, (float(x) for x in row)):
        if isinstance(param, Choice):
            params[param.name] = json_safe(param.choices[min(int(u * len(param.choices)), len(param.choices) - 1)])
            continue
        if param.with_inf:
            params[P_INF_PARAM] = u >= 1 - INF_SHARE
            if params[P_INF_PARAM]:
                continue
            u = u / (1 - INF_SHARE)
        params[param.name] = _in_range(param, u)
    return params


def _in_range(param: Range, u: float) -> float | int:
    if param.log:
        value = math.exp(math.log(param.low) + u * (math.log(param.high) - math.log(param.low)))
    else:
        value = param.low + u * (param.high - param.low)
    if param.integer:
        step = int(param.step or 1)
        span = int(param.high) - int(param.low)
        return int(param.low) + min(int(u * (span // step + 1)), span // step) * step
    if param.step is not None:
        value = param.low + round((value - param.low) / param.step) * param.step
    return min(max(value, param.low), param.high)


def enqueue_spread(study: optuna.Study, space: SearchSpace, n: int, seed: int | None) -> int:
    """Enqueue the spread phase's trials as WAITING trials (workers take them before sampling)."""
    points = spread_points(space, n, seed)
    for params in points:
        study.enqueue_trial(params, user_attrs={SPREAD_ATTR: True})
    return len(points)


def is_spread(trial: optuna.trial.FrozenTrial) -> bool:
    return bool(trial.user_attrs.get(SPREAD_ATTR))


class _SpreadRunsToTheEnd:
    """A pruner that never stops a spread trial; the others as its Optuna base class decides.
    Subclasses keep their Optuna class (TPE and CMA-ES look for a HyperbandPruner's brackets)."""

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return False if is_spread(trial) else super().prune(study, trial)  # type: ignore[misc]


class SpreadMedianPruner(_SpreadRunsToTheEnd, MedianPruner):
    pass


class SpreadSuccessiveHalvingPruner(_SpreadRunsToTheEnd, SuccessiveHalvingPruner):
    pass


class SpreadHyperbandPruner(_SpreadRunsToTheEnd, HyperbandPruner):
    pass
