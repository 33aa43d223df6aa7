"""The spread phase: a search's first trials cover the space evenly and are never pruned."""

from __future__ import annotations

import math

import optuna
import pytest

from lpstudy.design.space import SearchSpace
from lpstudy.design.spec import build_spec
from lpstudy.study.spread import SPREAD_ATTR, enqueue_spread, spread_points
from lpstudy.study.studies import make_pruner
from lpstudy.study.studies import creating_storage
from lpstudy.values import P_OR_INF_PARAM


def _quarter(p: float) -> int:
    return min(int((p - 1.0) / 0.75), 3)


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_eight_points_put_two_in_each_quarter_of_p_and_stay_in_range(seed):
    space = SearchSpace.from_mapping({"p": "1:4", "lr": "1e-4:1e-2", "gain_init": "2:64"})
    points = spread_points(space, 8, seed)
    assert len(points) == 8
    assert sorted(_quarter(pt["p"]) for pt in points) == [0, 0, 1, 1, 2, 2, 3, 3]
    for pt in points:
        assert 1 <= pt["p"] <= 4 and 1e-4 <= pt["lr"] <= 1e-2 and 2 <= pt["gain_init"] <= 64
    # a log range is spread on its log scale: each decade of lr's two holds four points
    assert sorted(int(math.log10(pt["lr"]) + 4) for pt in points) == [0] * 4 + [1] * 4


def test_p_with_infinity_gives_one_point_in_eight_to_infinity_and_choices_their_share():
    space = SearchSpace.from_mapping({"p": "1:4,inf", "n_layer": "1,2", "lr": "1e-3"})
    points = spread_points(space, 8, seed=3)
    assert sum(math.isinf(space.get("p").value_of(pt)) for pt in points) == 1
    assert all(set(pt) == {P_OR_INF_PARAM, "n_layer"} for pt in points)  # the space's own encoding of ∞
    assert sorted(pt["n_layer"] for pt in points) == [1] * 4 + [2] * 4
    assert all("lr" not in pt for pt in points)  # a fixed field is not spread


def test_the_worker_reads_a_spread_trial_back_as_the_space_suggests_it():
    spec = build_spec({"preset": "smoke"}, {"p": "1:4,inf"})
    study = optuna.create_study()
    assert enqueue_spread(study, spec.space, 8, seed=5) == 8
    seen = []
    for _ in range(8):
        trial = study.ask()
        seen.append(spec.space.suggest(trial))
        assert trial.user_attrs[SPREAD_ATTR] is True
        study.tell(trial, 1.0)
    assert sum(math.isinf(o["p"]) for o in seen) == 1
    assert all(1e-4 <= o["lr"] <= 1e-2 for o in seen)  # the default space's lr range


@pytest.mark.parametrize("pruner", ["sha", "median", "hyperband"])
def test_no_pruner_stops_a_spread_trial_that_it_stops_otherwise(pruner):
    spec = build_spec({"preset": "smoke", "pruner": pruner})
    study = optuna.create_study(pruner=make_pruner(spec), sampler=optuna.samplers.RandomSampler(seed=0))
    steps = range(spec.base_config().eval_interval, spec.base_config().max_steps + 1, spec.base_config().eval_interval)
    for _ in range(12):  # good curves first, so that a bad one is behind at every rung
        trial = study.ask()
        for step in steps:
            trial.report(1.0, step)
            assert not trial.should_prune()  # successive halving records its rungs as it is asked
        study.tell(trial, 1.0)

    def pruned_at(user_attrs: dict) -> int | None:
        study.enqueue_trial({"p": 2.0, "lr": 1e-3, "gain_init": 8.0}, user_attrs=user_attrs)
        trial = study.ask()
        for step in steps:
            trial.report(5.0, step)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                return step
        study.tell(trial, 5.0)
        return None

    assert pruned_at({}) is not None  # the same curve, not marked spread, is pruned
    assert pruned_at({SPREAD_ATTR: True}) is None


def test_a_search_study_is_created_with_its_spread_trials_waiting(tmp_path):
    from lpstudy.study.studies import open_and_create

    spec = build_spec({"preset": "smoke", "sampler_seed": 4})
    study, created, _ = open_and_create(creating_storage(f"sqlite:///{tmp_path / 's.db'}"), "s", spec)
    assert created
    waiting = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,))
    assert len(waiting) == spec.spread_trials == 8
    assert sorted(_quarter(t.system_attrs["fixed_params"]["p"]) for t in waiting) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(t.user_attrs[SPREAD_ATTR] for t in waiting)
    # created again with the same spec: found, and nothing enqueued twice
    again, created, _ = open_and_create(creating_storage(f"sqlite:///{tmp_path / 's.db'}"), "s", spec)
    assert not created and len(again.get_trials(deepcopy=False)) == 8
    # a grid has no spread phase: its cells are its trials
    grid = build_spec({"preset": "smoke", "sampler": "grid"}, {"p": "1,2", "lr": "1e-3"})
    g, _, enqueued = open_and_create(creating_storage(f"sqlite:///{tmp_path / 's.db'}"), "g", grid)
    assert enqueued == 2 and len(g.get_trials(deepcopy=False)) == 2


@pytest.mark.parametrize("pruner", ["sha", "median", "hyperband"])
def test_spread_trials_fill_every_pruners_rungs_so_a_worse_trial_after_them_is_pruned(pruner):
    """Issue 37: successive halving records a trial's rung value inside `prune`; a spread trial must
    still be recorded there (and never pruned), else a trial far worse than every spread trial
    runs to the end under sha and hyperband."""
    spec = build_spec({"preset": "smoke", "pruner": pruner})
    cfg = spec.base_config()
    study = optuna.create_study(pruner=make_pruner(spec), sampler=optuna.samplers.RandomSampler(seed=0))
    enqueue_spread(study, spec.space, 8, seed=0)
    steps = range(cfg.eval_interval, cfg.max_steps + 1, cfg.eval_interval)
    for _ in range(8):  # the spread phase at loss 1.0, never pruned
        trial = study.ask()
        assert trial.user_attrs[SPREAD_ATTR] is True
        for step in steps:
            trial.report(1.0, step)
            assert not trial.should_prune()
        study.tell(trial, 1.0)
    trial = study.ask()  # sampled, not spread, and five times worse at every evaluation
    stopped = next((step for step in steps if (trial.report(5.0, step), trial.should_prune())[1]), None)
    assert stopped is not None and stopped < cfg.max_steps, f"{pruner} ran a trial at 5.0 to the end"


def test_an_integer_log_range_is_spread_on_its_log_scale():
    """Issue 37: batch_size over 1-1024 on a log scale got points 51...927 (3 % at ≤ 32, where
    log-uniform puts about half)."""
    space = SearchSpace.from_mapping({"batch_size": {"low": 1, "high": 1024, "log": True}})
    points = [pt["batch_size"] for pt in spread_points(space, 64, seed=2)]
    assert all(isinstance(b, int) and 1 <= b <= 1024 for b in points)
    small = sum(b <= 32 for b in points) / len(points)
    assert 0.4 <= small <= 0.65, sorted(points)  # log-uniform over [0.5, 1024.5]: 55 % at ≤ 32
    assert min(points) <= 2 and max(points) >= 512  # both ends of the decades are reached


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_every_sampler_draws_p_infinity_at_the_spread_phases_share(sampler):
    """Issue 37: p = ∞ beside a range was a 50/50 switch for random search and TPE's start-up
    trials (and CMA-ES, which drew the switch at random) while the spread phase gave it 1/8. Now ∞
    is the top slice of p's one axis; CMA-ES models it as the axis' continuation (from the middle
    of the space, so it draws ∞ only where the losses lead it)."""
    from lpstudy.study.studies import make_sampler

    spec = build_spec({"preset": "smoke", "sampler": sampler, "sampler_seed": 1}, {"p": "1:4,inf"})
    study = optuna.create_study(sampler=make_sampler(spec))
    drawn = []
    for _ in range(200):  # a flat objective: nothing draws any p to ∞ or away from it
        trial = study.ask()
        drawn.append(math.isinf(spec.space.suggest(trial)["p"]))
        study.tell(trial, 1.0)
    share = sum(drawn) / len(drawn)
    assert 0.04 <= share <= 0.25, f"{sampler} drew ∞ in {share:.0%} of 200 trials"
    from lpstudy.design.space import INF_SHARE

    assert INF_SHARE == 1 / 8
    spread = spread_points(spec.space, 64, seed=1)
    assert sum(math.isinf(spec.space.get("p").value_of(pt)) for pt in spread) == 64 * INF_SHARE
