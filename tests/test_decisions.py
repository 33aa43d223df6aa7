"""The worker's one loop and its deciders' contract (lpstudy.study.decisions): every kind of study
answers the loop only with RunTrial, Wait or Done; the loop keeps --n-trials, --timeout and a
signal for every kind alike, and stops on Done with the decider's reason as its report's and its one
stop line's."""

from __future__ import annotations

import pytest

from lpstudy.db.optuna_storage import open_storage
from lpstudy.study.decisions import Done, RunTrial, StageOver, Wait
from lpstudy.study.worker import WorkerOptions, run_worker
from tests.written_study import PlannedObjective, record


class Scripted:
    """A decider that answers from a script (no study): what the loop does with each answer."""

    def __init__(self, *answers) -> None:
        self.answers, self.asked = list(answers), []
        self.sources = None

    def start(self, sources) -> str:
        self.sources = sources
        return "scripted start"

    def next(self, done: int):
        self.asked.append(done)
        answer = self.answers.pop(0) if self.answers else Wait(0.05)
        return answer(self.sources) if callable(answer) else answer


def _run(decider, **options):
    said: list[str] = []
    report = run_worker(WorkerOptions(study="none", device="cpu", show_progress=False, **options), say=said.append,
                        objective=lambda ctx, trial: pytest.fail("no trial runs"), storage=None, decider=decider)
    return report, said


def test_the_loop_stops_on_done_with_its_reason_in_the_report_and_the_one_stop_line():
    decider = Scripted(Wait(0), Wait(0), Done("planted reason"), Done("never asked"))
    report, said = _run(decider)
    assert decider.asked == [0, 0, 0]  # asked again after each Wait, never after Done
    assert report.reason == "planted reason" and report.exit_code == 0 and not report.interrupted
    assert said == ["scripted start", "stopped: planted reason · this worker's trials: none"]


def test_the_loops_own_checks_come_before_the_decider_whatever_it_says():
    report, said = _run(Scripted(), timeout=0.3)  # a decider that only ever waits
    assert report.reason == "--timeout of 0.3 s reached"
    assert said[-1] == "stopped: --timeout of 0.3 s reached · this worker's trials: none"

    class Signalled(Scripted):
        def start(self, sources):
            sources.stop.set()  # as SIGINT sets it while the worker opens its study
            return super().start(sources)

    decider = Signalled(Done("not asked: the signal came first"))
    report, _ = _run(decider)
    assert report.reason == "stopped by a signal" and report.interrupted and decider.asked == []


def _recorded(decider, log: list):
    """The decider, each of its answers to the loop logged."""

    class Recorded:
        def start(self, sources):
            return decider.start(sources)

        def next(self, done):
            answer = decider.next(done)
            log.append(answer)
            return answer

    return Recorded()


def _check_contract(log: list, report, decided: bool) -> None:
    assert all(isinstance(answer, (RunTrial, Wait, Done)) for answer in log), log
    assert not any(isinstance(answer, StageOver) for answer in log)  # the stage engine answers those
    assert [isinstance(answer, Done) for answer in log].count(True) == decided  # Done once, and it is the last
    if decided:  # else the loop's own check (--n-trials) stopped it before it asked again
        assert isinstance(log[-1], Done) and report.reason == log[-1].reason
    assert sum(isinstance(answer, RunTrial) for answer in log) == sum(report.trials.values())


def _plan(cfg):
    """A run whose final loss the test chose: p = 1 a hair above p = 2 on every fold, by a little more on
    each (equivalent; the same offset on every fold would decide nothing: no spread, no standard error)."""
    above = 0.002 + 0.0001 * cfg.fold if cfg.p == 1.0 else 0.0
    return [record(0, 4.0), record(30, 2.8 + 0.02 * cfg.fold + above)], False


def _run_kind(url: str, name: str, decided: bool = True, **options):
    from lpstudy.study.deciders import decider_for

    log: list = []
    said: list[str] = []
    with open_storage(url, wait=True) as storage:
        report = run_worker(WorkerOptions(study=name, storage=url, device="cpu", show_progress=False, **options),
                            say=said.append, objective=PlannedObjective(_plan), storage=storage,
                            decider=_recorded(decider_for(storage, name), log))
    _check_contract(log, report, decided)
    assert said[-1].startswith(f"stopped: {report.reason} · ")
    return report, log, said


def test_a_search_and_a_grid_answer_only_typed_decisions_and_stop_on_done(sqlite_url):
    from lpstudy.study.replicate import replicate
    from lpstudy.design.space import SearchSpace
    from lpstudy.design.spec import StudySpec
    from lpstudy.study.studies import creating_storage, open_and_create

    space = SearchSpace.from_mapping({"lr": {"choices": [1e-3, 1e-2]}, "fold": {"value": 0}, "folds": {"value": 2},
                                      "max_steps": {"value": 30}, "eval_interval": {"value": 10}})
    spec = StudySpec(space=space, preset="smoke", sampler="random", sampler_seed=3, spread_trials=0,
                     n_trials=3).validate()
    with creating_storage(sqlite_url) as storage:
        open_and_create(storage, "search", spec)
        replicate(storage, "grid", "smoke", [1.0, 2.0], 2, fixed={"max_steps": 30, "eval_interval": 10})
    report, log, said = _run_kind(sqlite_url, "search")
    assert report.reason == "the study reached its target of 3 trials" and report.trials == {"COMPLETE": 3}
    assert said[0].startswith("study 'search' (")
    assert {answer.source.name for answer in log if isinstance(answer, RunTrial)} == {"search"}
    report, log, _ = _run_kind(sqlite_url, "grid")
    assert report.reason == "no grid cell left" and report.trials == {"COMPLETE": 4}


@pytest.mark.slow  # a replicate run --until-decided to its verdicts: about 10 s
def test_a_replicate_run_until_decided_answers_its_stages_and_stops_when_every_arm_is_decided(sqlite_url):
    from lpstudy.study.replicate import replicate
    from lpstudy.study.studies import creating_storage

    with creating_storage(sqlite_url) as storage:
        replicate(storage, "seq", "smoke", [1.0, 2.0], 6, fixed={"max_steps": 30, "eval_interval": 10},
                  until_decided={"rounds": [3, 5, 6], "reference": 2.0, "rope": 0.05, "alpha": 0.05})
    report, log, _ = _run_kind(sqlite_url, "seq")
    # p = 1 is within 0.1 % of p = 2 on every fold: decided (equivalent) at the first look, after 3 folds
    assert report.reason == "every arm is decided or the last round ran (lpstudy verdict shows them)"
    assert report.trials == {"COMPLETE": 6}


@pytest.mark.slow  # a comparison run by one worker, tuning and folds: about 10 s
def test_a_comparisons_arms_answer_only_typed_decisions_and_n_trials_counts_across_them(sqlite_url):
    from lpstudy.study.compare import create_compare, make_plan

    plan = make_plan("p", ["1", "2"], ["lr"], 2, 2, "smoke", fixed={"max_steps": 30, "eval_interval": 10},
                     sampler_seed=1)
    with open_storage(sqlite_url, create_tables=True) as storage:
        create_compare(storage, "cmp", plan)
    report, first, said = _run_kind(sqlite_url, "cmp", decided=False, n_trials=3)  # --n-trials: the worker's, across the arms
    assert report.reason == "ran 3 trial(s) (--n-trials)" and report.trials == {"COMPLETE": 3}
    report, log, said = _run_kind(sqlite_url, "cmp")
    assert report.reason == "nothing left to run in the comparison" and report.trials == {"COMPLETE": 5}
    ran = [answer.source.name for answer in first + log if isinstance(answer, RunTrial)]
    # the budget of 2 tuning trials an arm, then its 2 folds: 8 trials in all, each once
    assert sorted(ran) == sorted(2 * ["cmp:p=1:tune", "cmp:p=2:tune", "cmp:p=1:folds", "cmp:p=2:folds"]), ran
    assert said[0].startswith("comparison 'cmp' in ") and sum(line.startswith("stopped:") for line in said) == 1
    assert any(line.startswith("cmp:p=1:folds: trial 0 COMPLETE") for line in said)  # each trial's line names its arm
