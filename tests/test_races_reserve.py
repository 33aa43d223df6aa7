"""The race reserve (issue 54): the last share of a search's budget kept for races, one rule
(lpstudy.design.intensify.RaceReserve) that the replay benchmark and lpstudy's worker both keep, and
the spread phase `search --workers W` scales to its workers."""

from __future__ import annotations

import optuna
import pytest

from lpstudy.results.replay.methods import Method, default_method
from lpstudy.results.replay.traces import replay_one
from lpstudy.design.intensify import RaceReserve
from lpstudy.values import RACE_FOLD_ATTR
from tests.test_races import _planned_search, _table


def _trials(url: str, name: str) -> list[optuna.trial.FrozenTrial]:
    return sorted(optuna.load_study(study_name=name, storage=url).get_trials(), key=lambda t: t.number)


def _sampled(trials) -> list[optuna.trial.FrozenTrial]:
    return [t for t in trials if t.user_attrs.get(RACE_FOLD_ATTR) is None]


def test_the_reserve_starts_at_its_share_of_the_budget_counting_what_runs_to_its_end():
    rule = RaceReserve(0.2)
    assert not rule.only_races(7.9, 10) and rule.only_races(8, 10) and rule.only_races(9, 10)
    assert not RaceReserve(0.0).only_races(10, 10)  # no reserve
    assert not rule.only_races(100, None)  # no budget: nothing to keep a share of


@pytest.mark.slow  # two studies of 7 and 10 trials run by a worker: 5-15 s
def test_a_worker_past_its_reserve_takes_only_races_then_stops(sqlite_url):
    """A worker with --n-trials 10 and 40 % of them kept for races runs whatever comes first (the
    sampler's trials and the races they enqueue) for 6 trials, then only the leaders' next folds
    (here the race the sixth enqueued), and stops when no race is left, under its 10; without a
    reserve it samples on to its 10. Watched fail before the worker kept the reserve (10 trials,
    sampled ones among the last 4)."""
    _planned_search(sqlite_url, "kept", race=1, n_trials=None, worker_trials=10, race_reserve=0.4)
    trials = _trials(sqlite_url, "kept")
    assert len(trials) == 7 and all(t.state.name == "COMPLETE" for t in trials)
    assert not _sampled(trials[6:])  # past 6 of 10: races only

    _planned_search(sqlite_url, "unkept", race=1, n_trials=None, worker_trials=10, race_reserve=0.0)
    trials = _trials(sqlite_url, "unkept")
    assert len(trials) == 10 and _sampled(trials[6:])


def test_a_worker_keeps_the_reserve_of_the_studys_target_counting_running_trials(sqlite_url):
    """With no --n-trials of its own, the study's n_trials target is the budget: past (1 − 0.4) × 10
    trials taken, only races."""
    _planned_search(sqlite_url, "target", race=1, n_trials=10, worker_trials=None, race_reserve=0.4)
    trials = _trials(sqlite_url, "target")
    assert len(trials) == 7 and not _sampled(trials[6:])


def test_a_worker_of_a_run_counts_every_workers_trials_since_the_run_began(sqlite_url):
    """`search --workers W --n-trials N` starts each worker with the run (its start, N): the reserve
    is a share of the study's trials taken since, every worker's, as the replay counts its budget,
    not of a worker's own share (one or two trials each at many workers, too few to keep 20 % of).
    Here one worker of a run of 10 whose own --n-trials (20) would keep nothing before its 16th
    trial: past 6 of the run's 10, only races. Watched fail with the run's budget ignored (12 trials)."""
    from lpstudy.study.launch import worker_command
    from lpstudy.study.worker import WorkerOptions

    _planned_search(sqlite_url, "run", race=1, n_trials=None, worker_trials=20, run_budget=(0, 10), race_reserve=0.4)
    trials = _trials(sqlite_url, "run")
    assert len(trials) == 7 and not _sampled(trials[6:])
    command = worker_command(WorkerOptions(study="s", run_budget=(3, 40)), "cpu", 20)
    assert command[command.index("--run-budget") + 1] == "3:40"  # what search's worker processes are told


def test_a_run_that_is_all_spread_phase_keeps_no_reserve(sqlite_url):
    """`search`'s first run, --n-trials 8 with 8 spread trials, runs its 8 spread points: its races
    could not be enqueued within it, so there is nothing to keep a share for. Watched fail without
    the spread's exception (7 run, the eighth point left waiting)."""
    _planned_search(sqlite_url, "spread", race=2, n_trials=None, worker_trials=8, spread_trials=8, race_reserve=0.2)
    trials = _trials(sqlite_url, "spread")
    assert len(trials) == 8 and all(t.state.name == "COMPLETE" for t in trials)


@pytest.mark.parametrize("always", [False, True])
def test_the_replay_and_the_worker_read_one_rule(sqlite_url, monkeypatch, always):
    """The rule changed in its one place (RaceReserve.only_races) moves both: never past the
    reserve, the replay's wave of eight workers samples all eight runs and the worker its 6 trials;
    always past it, neither samples a trial (nothing is raced before a trial has finished)."""
    monkeypatch.setattr(RaceReserve, "only_races", lambda self, committed, budget: always)
    trace = replay_one(_table(), Method("random", "none", race=1, reserve=0.25), seed=0, budget_steps=8 * 30,
                       workers=8)
    _planned_search(sqlite_url, "moved", race=1, n_trials=None, worker_trials=6, race_reserve=0.5)
    worker_trials = len(_trials(sqlite_url, "moved"))
    if always:
        assert trace.trials == 0 and worker_trials == 0
    else:
        assert trace.trials == 8 and trace.race_steps == 0 and worker_trials == 6


def test_the_replayed_default_is_the_searchs_default_with_its_reserve():
    """The replay measures what `lpstudy search` runs: the default keeps 20 % for races."""
    assert default_method().reserve == 0.2 and default_method().name == "tpe+none@8/race2r20"


def test_search_scales_a_new_studys_spread_phase_to_its_workers_unless_told():
    from lpstudy.cli.search import spread_for_workers
    from lpstudy.cli.study_options import StudyOptions

    assert spread_for_workers(StudyOptions(), None, 32) == {"spread_trials": 32}
    assert spread_for_workers(StudyOptions(), None, 8) == {}  # the default already covers 8 workers
    assert spread_for_workers(StudyOptions(spread_trials=4), None, 32) == {}  # the user's own
    assert spread_for_workers(StudyOptions(), object(), 32) == {}  # a study that exists keeps its own
