"""A seeded sampler whose draws belong to the trial, not to the process that draws them.

Optuna seeds a sampler's random stream once, when the sampler is made. A study's sampler is made
whenever a process opens the study: each worker process, and a comparison's worker once per tuning
trial (it opens the arm's study for every trial it takes). With `--sampler-seed`, every one of those
samplers started the same stream, so every opening drew the same first configuration: two workers
on one search proposed the same learning rate and gain, and a comparison's arm tuned on the same
random startup point over and over. Optuna's own advice for distributed runs is a different seed
per process; that makes a seeded study's draws depend on which worker happened to take which trial.

Here the seed is the trial's: the sampler for trial n is made with a seed derived from the study's
seed and n (numpy's SeedSequence, the established way to derive independent streams from one
seed), so trial n draws the same values whichever process takes it, given the same finished trials
before it, and two trials never share a stream. Samplers read the study's history from its storage
for every trial (TPE, CMA-ES keep their state there), so a sampler made per trial loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState


def trial_seed(study_seed: int, number: int) -> int:
    """The seed of trial `number`'s draws in a study seeded with `study_seed`."""
    return int(np.random.SeedSequence([study_seed, number]).generate_state(1)[0])


class PerTrialSeededSampler(BaseSampler):
    """Delegates every call about trial n to a sampler made by `make(trial_seed(seed, n))`."""

    def __init__(self, make: Callable[[int], BaseSampler], seed: int) -> None:
        self._make, self._seed = make, seed
        self._number: int | None = None
        self._inner: BaseSampler | None = None

    def _for(self, trial: FrozenTrial | optuna.Trial) -> BaseSampler:
        if self._inner is None or trial.number != self._number:
            self._number, self._inner = trial.number, self._make(trial_seed(self._seed, trial.number))
        return self._inner

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._for(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._for(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._for(trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._for(trial).before_trial(study, trial)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self._for(trial).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:  # Optuna calls it for n_jobs > 1: each trial already has its own stream
        pass
