"""`--sampler-seed`: a seeded study's draws belong to the trial. A study is opened afresh by every
worker process, and by a comparison's worker for every tuning trial; each opening made a sampler
that started the seed's stream again, so every opening drew the same first configuration."""

from __future__ import annotations

import optuna
import pytest

from lpstudy.design.spec import build_spec
from lpstudy.study.studies import study_sampler


def _draws(seed: int | None, sampler: str, trials: int) -> list[tuple[float, float]]:
    """(lr, gain) of each trial of a study opened afresh for every trial, as a comparison's worker does."""
    spec = build_spec({"preset": "smoke", "sampler": sampler, "sampler_seed": seed})
    storage = optuna.storages.InMemoryStorage()
    optuna.create_study(storage=storage, study_name="s", sampler=study_sampler(spec))
    draws = []
    for _ in range(trials):
        study = optuna.load_study(study_name="s", storage=storage, sampler=study_sampler(spec))
        trial = study.ask()
        lr, gain = trial.suggest_float("lr", 1e-4, 1e-1, log=True), trial.suggest_float("gain", 1.0, 30.0)
        study.tell(trial, (lr - 3e-3) ** 2 + (gain - 10) ** 2 * 1e-6)
        draws.append((lr, gain))
    return draws


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes"])
def test_a_seeded_study_opened_for_every_trial_draws_a_new_configuration_each_time(sampler):
    draws = _draws(7, sampler, 12)
    assert len(set(draws)) == len(draws), draws


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_the_same_seed_draws_the_same_trials_and_another_seed_other_ones(sampler):
    assert _draws(7, sampler, 12) == _draws(7, sampler, 12)
    assert not set(_draws(7, sampler, 12)) & set(_draws(8, sampler, 12))
