"""The replay with asynchronous workers (issue 54; lpstudy.results.replay.traces.replay_one with
`workers`, lpstudy.results.replay.clock): W workers on one simulated clock, each run taking its
stored seconds a step; the sampler asks beside the trials still running, the pruner hears each
report at the time the run reaches it, races are taken by whichever worker frees, and the total
compute is the budget at any W. Hand-made tables whose times are worked out here."""

from __future__ import annotations

import json
import math

import optuna
import pytest
from optuna.trial import TrialState

from lpstudy.results.replay import traces
from lpstudy.results.replay.clock import TimeModel
from lpstudy.results.replay.grid_table import GridTable, Run, write_table
from lpstudy.results.replay.methods import Method
from lpstudy.results.replay.traces import Trace, replay_one
from lpstudy.values import RACE_FOLD_ATTR
from tests.study_helpers import cli

STEPS = (0, 10, 20, 30)
FIXED = {"max_steps": 30, "eval_interval": 10, "warmup_steps": 10, "eval_iters": 2, "folds": 10}


def _run(final: float, seconds: float = 3.0, start: float = 4.0) -> Run:
    """A curve from `start` down to `final` at steps 0, 10, 20, 30, that took `seconds` (0.1 s a step by default)."""
    values = tuple(start + (final - start) * s / 30 for s in STEPS)
    return Run(steps=STEPS, val_loss=values, steps_run=30, value=final, wall_time_s=seconds)


def _table(finals: dict[float, tuple[float, float]], seconds: dict[float, float] | None = None) -> GridTable:
    lrs = list(finals)
    runs = {(i, f): _run(finals[lr][f], (seconds or {}).get(lr, 3.0)) for i, lr in enumerate(lrs) for f in (0, 1)}
    return GridTable(params=("lr",), values={"lr": lrs}, configs=[(lr,) for lr in lrs], folds=[0, 1], runs=runs,
                     preset="smoke", fixed=dict(FIXED))


HAND = {1e-4: (2.0, 2.2), 1e-3: (1.9, 1.9), 1e-2: (1.85, 2.15), 1e-1: (2.5, 2.7)}
RANDOM = Method("random", "none")


def test_the_clock_takes_each_runs_stored_seconds_a_step_and_the_pooled_rate_where_none_is_stored():
    table = _table(HAND, seconds={1e-2: 6.0})
    table.runs[(0, 1)] = Run(STEPS, (4.0, 3.0, 2.5, 2.2), 30, 2.2)  # no wall time stored
    clock = TimeModel.of(table)
    assert clock.measured
    assert clock.seconds(2, 0, 30) == pytest.approx(6.0)  # lr = 1e-2: 6 s for 30 steps
    assert clock.seconds(1, 0, 10) == pytest.approx(1.0)  # 0.1 s a step: 10 steps, 1 s
    # the pooled rate: 7 timed runs, 3 s each but two of 6 s, over 7 × 30 steps
    assert clock.seconds(0, 1, 30) == pytest.approx((5 * 3.0 + 2 * 6.0) / (7 * 30) * 30)
    bare = _table(HAND)
    for key, run in bare.runs.items():
        bare.runs[key] = Run(run.steps, run.val_loss, run.steps_run, run.value)
    assert not TimeModel.of(bare).measured and TimeModel.of(bare).seconds(0, 0, 30) == 30.0


@pytest.mark.parametrize("workers, ends", [(1, [3.0, 6.0, 9.0, 12.0, 15.0, 18.0]),
                                           (3, [3.0, 3.0, 3.0, 6.0, 6.0, 6.0])])
def test_w_workers_run_w_trials_at_once_on_one_clock(workers, ends):
    """Every run takes 3 s; a budget of six runs: one worker ends them 3 s apart, three run three at once."""
    trace = replay_one(_table(HAND), RANDOM, seed=0, budget_steps=6 * 30, workers=workers)
    assert trace.spent == [30 * (i + 1) for i in range(6)]
    assert trace.clock == pytest.approx(ends)
    assert trace.workers == workers


@pytest.mark.parametrize("workers, ends", [(1, [4.0, 8.0, 12.0, 16.0, 20.0, 24.0]),
                                           (3, [4.0, 4.0, 4.0, 8.0, 8.0, 8.0])])
def test_the_workers_own_time_a_trial_occupies_the_worker_once_a_trial(workers, ends):
    """A worker's own second a trial (asking, building the model; measured from a real search, stored
    by no grid) is part of each trial's time on the clock: 3 s of training and 1 s of the worker's."""
    trace = replay_one(_table(HAND), RANDOM, seed=0, budget_steps=6 * 30, workers=workers, per_trial_s=1.0)
    assert trace.clock == pytest.approx(ends)
    assert trace.spent == [30 * (i + 1) for i in range(6)]  # the compute is the training's alone


@pytest.mark.parametrize("workers", [1, 4, 64])
def test_the_total_compute_is_the_budget_at_any_number_of_workers(workers):
    """A worker asks a trial only while the compute spent and the running runs, to their end, stay
    within the budget: 64 workers do not start 64 runs on a budget of 5."""
    trace = replay_one(_table(HAND), RANDOM, seed=1, budget_steps=5 * 30, workers=workers)
    assert trace.trials == 5 and trace.spent[-1] == 5 * 30
    assert trace.clock[-1] == pytest.approx(3.0 * math.ceil(5 / workers))


class _Recording(optuna.samplers.RandomSampler):
    """Random search that notes how many trials were RUNNING each time a trial was sampled."""

    def __init__(self, seen: list[int]) -> None:
        super().__init__(seed=0)
        self.seen = seen

    def sample_independent(self, study, trial, name, distribution):
        self.seen.append(len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))) - 1)  # besides itself
        return super().sample_independent(study, trial, name, distribution)


def test_the_sampler_asks_beside_the_trials_still_running(monkeypatch):
    """What TPE's constant liar needs: with four workers the first four trials are sampled while 0, 1,
    2, 3 others run, and every later one while the three others run (all runs take as long)."""
    seen: list[int] = []
    monkeypatch.setattr(traces, "build_sampler", lambda method, spec, seed: _Recording(seen))
    replay_one(_table(HAND), RANDOM, seed=0, budget_steps=12 * 30, workers=4)
    assert seen == [0, 1, 2, 3] + [3] * 8
    seen.clear()
    replay_one(_table(HAND), RANDOM, seed=0, budget_steps=12 * 30, workers=1)
    assert seen == [0] * 12


class _Listening(optuna.pruners.BasePruner):
    """Prunes nothing; notes each report (trial number, step) in the order the pruner is asked."""

    def __init__(self, heard: list[tuple[int, int]]) -> None:
        self.heard = heard

    def prune(self, study, trial) -> bool:
        self.heard.append((trial.number, trial.last_step))
        return False


class _InTurn(optuna.samplers.RandomSampler):
    """Draws the learning rates it is given, in turn."""

    def __init__(self, lrs: list[float]) -> None:
        super().__init__(seed=0)
        self.lrs = list(lrs)

    def sample_independent(self, study, trial, name, distribution):
        return self.lrs.pop(0) if name == "lr" else super().sample_independent(study, trial, name, distribution)


def test_the_pruner_hears_each_report_when_the_run_reaches_it(monkeypatch):
    """Two workers, a slow run (1 s a step) and a fast one (0.1 s a step): the fast run's four reports
    (at 0, 1, 2, 3 s) come between the slow run's first two (0 and 10 s), as a shared pruner hears
    them in a real study."""
    table = _table({1e-4: (2.0, 2.0), 1e-1: (2.1, 2.1)}, seconds={1e-4: 30.0, 1e-1: 3.0})
    heard: list[tuple[int, int]] = []
    monkeypatch.setattr(traces, "build_sampler", lambda method, spec, seed: _InTurn([1e-4, 1e-1]))
    monkeypatch.setattr(traces, "build_pruner", lambda method, spec: _Listening(heard))
    trace = replay_one(table, RANDOM, seed=0, budget_steps=2 * 30, workers=2)
    assert trace.clock == pytest.approx([3.0, 30.0])  # in the order they end: the fast one first
    assert heard == [(0, 0), (1, 0), (1, 10), (1, 20), (1, 30), (0, 10), (0, 20), (0, 30)]


def test_races_are_taken_by_whichever_worker_frees_and_each_fold_raced_once(monkeypatch):
    """With four workers and two leaders raced, every race's trial is a (configuration, fold) that no
    other trial ran or runs: a race enqueued and still waiting or running is not asked for again. The
    races' compute is counted."""
    studies: list[optuna.Study] = []
    create = optuna.create_study

    def keep(*args, **kwargs):
        studies.append(create(*args, **kwargs))
        return studies[-1]

    monkeypatch.setattr(traces.optuna, "create_study", keep)
    trace = replay_one(_table(HAND), Method("random", "none", race=2), seed=0, budget_steps=16 * 30, workers=4)
    done = [t for t in studies[0].get_trials() if t.state == TrialState.COMPLETE]
    raced = [(t.params["lr"], t.user_attrs[RACE_FOLD_ATTR]) for t in done if RACE_FOLD_ATTR in t.user_attrs]
    assert raced and len(raced) == len(set(raced))
    assert all(fold == 1 for _, fold in raced)  # seed 0 tunes on fold 0: races run fold 1
    assert trace.race_steps == 30 * len(raced)
    assert trace.returned[-1] == 1  # lr = 1e-3: the best mean over both folds (1.9)


def test_the_time_to_the_final_choice_is_when_the_returned_configuration_was_first_returned_for_good():
    trace = Trace(spent=[30, 60, 90, 120, 150], returned=[-1, 2, 1, 2, 2], clock=[1.0, 2.0, 3.0, 4.0, 5.0],
                  workers=8, race_steps=30, duplicate_steps=60)
    assert trace.chosen_at == 4.0
    kept = Trace.from_plain(json.loads(json.dumps(trace.to_plain())))
    assert (kept.chosen_at, kept.workers, kept.race_steps, kept.duplicate_steps) == (4.0, 8, 30, 60)
    assert math.isnan(Trace().chosen_at)


def test_replay_takes_workers_and_reports_the_time_to_the_choice(capsys, tmp_path):
    path = write_table(_table(HAND), tmp_path / "hand.json.gz")
    code, stdout, err = cli(capsys, "replay", "--grid", str(path), "--seeds", "2", "--methods", "random+none",
                            "--budget", "0.5", "--workers", "4", "--json", "--no-progress")
    assert code == 0, err
    plain = json.loads(stdout)
    (method,) = plain["methods"]
    assert plain["workers"] == 4 and method["workers"] == 4
    # a budget of 0.5 × 8 runs: four runs of 3 s, all at once
    assert method["clock_end_median"] == pytest.approx(3.0)
    assert method["chosen_at_median"] == pytest.approx(3.0)
    code, _, err = cli(capsys, "replay", "--grid", str(path), "--workers", "0", "--no-progress")
    assert code == 2 and "--workers" in err


def test_a_race_reserve_keeps_the_end_of_the_budget_for_the_leaders_of_a_wave():
    """Eight workers and a budget of eight runs: without a reserve all eight are sampled at once and
    no leader is raced (the tuning fold's best is returned, measured on one fold); with the last
    25 % kept for races, six are sampled, then the leaders of that wave run on fold 1."""
    from lpstudy.design.intensify import Intensifier

    plain = replay_one(_table(HAND), Method("random", "none", race=1), seed=0, budget_steps=8 * 30, workers=8)
    assert plain.race_steps == 0 and plain.trials == 8 and plain.clock[-1] == pytest.approx(3.0)
    kept = replay_one(_table(HAND), Method("random", "none", race=1, reserve=0.25), seed=0, budget_steps=8 * 30,
                      workers=8)
    assert kept.race_steps > 0 and kept.spent[-1] <= 8 * 30
    assert kept.trials - kept.race_steps // 30 == 6  # six sampled, the rest races
    assert kept.clock[-1] > 3.0  # the races run after the wave
    assert Intensifier.of(1, 5, 0, 2).wanted == (0, 1)  # what a race measures: the tuning fold, then fold 1


def test_a_race_reserve_is_written_after_the_race():
    from lpstudy.errors import UserError
    from lpstudy.results.replay.methods import pick_methods

    (m,) = pick_methods("tpe+none@8/race2r20")
    assert (m.race, m.reserve, m.name) == (2, 0.2, "tpe+none@8/race2r20")
    (m,) = pick_methods("tpe+none@8/race3x2r10")
    assert (m.race, m.race_folds, m.reserve, m.name) == (3, 2, 0.1, "tpe+none@8/race3x2r10")
    with pytest.raises(UserError, match="kept for races"):
        pick_methods("tpe+none@8/race2r100")


def test_past_the_sampled_share_a_spread_trial_still_waiting_is_not_taken():
    """A spread phase larger than the budget's sampled share: the reserve still goes to races."""
    trace = replay_one(_table(HAND), Method("random", "none", spread=8, race=1, reserve=0.25), seed=0,
                       budget_steps=8 * 30, workers=8)
    assert trace.race_steps > 0 and trace.trials - trace.race_steps // 30 == 6
