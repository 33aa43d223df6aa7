"""A study a worker takes trials from, opened once, and how each kind of study gives its next
trial as a typed decision (lpstudy.study.decisions):

    SearchTrials   a search (or a comparison arm's tuning): a new trial within its n_trials target,
                   or, past its race reserve, only the races its intensifier asked for
                   (lpstudy.design.intensify.RaceReserve, the rule the replay benchmark keeps);
                   told a completed trial, it enqueues the races the intensifier asks for
    GridCells      a replicate or grid (or a comparison arm's folds): a waiting cell; a stage's end
                   where it runs --until-decided (lpstudy.study.stages decides the next)

Before each claim the source fails the RUNNING trials whose worker died (their heartbeat is older
than the grace period) and enqueues each again (lpstudy.db.liveness). OneStudy is the decider of a
worker on one study without stages: its source's claims, as they come.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from optuna.trial import TrialState

from lpstudy.study import telemetry
from lpstudy.db.asking import WAIT
# `as pop_waiting_trial`: a name of this module's that benchmarks/bench_load.py replaces (the claim on its board)
from lpstudy.study.claims import ask_within_target, take_race
from lpstudy.study.claims import pop_waiting_trial as pop_waiting_trial
from lpstudy.study.decisions import Claim, Decision, Done, RunTrial, Sources, StageOver, Wait, unstaged
from lpstudy.study.races import enqueue_races

if TYPE_CHECKING:
    import optuna

    from lpstudy.db.liveness import Liveness
    from lpstudy.db.optuna_storage import StudyStorage
    from lpstudy.design.spec import StudySpec
    from lpstudy.study.trial_context import TrialContext, TrialOutcome
    from lpstudy.study.worker import WorkerOptions

# A grid worker that finds fewer trials than cells waits this long for its creator to enqueue more.
ENQUEUE_WAIT_S = 60.0


@dataclass
class StudySource:
    """One study a worker takes trials from, opened once (lpstudy.study.worker.Worker.open): the
    study, its spec, its liveness, the objective's context, and where its lines go (a comparison's
    arm names itself in each)."""

    name: str
    study: optuna.Study
    spec: StudySpec
    storage: StudyStorage
    liveness: Liveness
    max_retry: int
    ctx: TrialContext
    say: Callable[[str], None]
    options: WorkerOptions
    race_reserve: bool = True  # keep a search's race reserve: not a comparison's arm (its worker picks the arm)

    def describe(self) -> str:
        """The line a worker on this study says as it starts."""
        return (f"study {self.name!r} ({self.spec.describe()}) in {self.storage.display_url} on {self.ctx.device}"
                + self.liveness.note)

    def claim(self, done: int) -> Claim:
        """The next trial of this study, or why there is none (see the module); `done`: the trials
        this worker has run."""
        raise NotImplementedError

    def told(self, outcome: TrialOutcome, room: int | None) -> None:
        """A trial this worker claimed from it ended, not FAIL, by this worker's tell; room: the
        trials this worker runs yet (None: no limit)."""

    def _fail_stale(self) -> None:
        for line in self.liveness.fail_stale(self.study):  # dead workers' trials: failed, enqueued again
            self.say(line)

    def _claimed(self, trial: optuna.Trial, started: float) -> RunTrial:
        telemetry.trial_claimed(time.monotonic() - started)
        return RunTrial(trial, self)


@dataclass
class SearchTrials(StudySource):
    def claim(self, done: int) -> Claim:
        spec, storage, study = self.spec, self.storage, self.study
        reached = Done(f"the study reached its target of {spec.n_trials} trials")
        if spec.n_trials is not None and storage.count_trials(
                study, (TrialState.COMPLETE, TrialState.PRUNED)) >= spec.n_trials:
            return reached
        self._fail_stale()
        started = time.monotonic()
        if self._past_race_reserve(done):
            trial = take_race(study, storage)  # the last share of the run is the races' (spec.race_reserve)
            if trial is None:
                return Done(f"the last {spec.race_reserve:.0%} of the trials are kept for races "
                            "(race_reserve) and no race is left to run")
        else:
            trial = ask_within_target(study, spec, storage)
            if trial is None:
                return reached
        if trial is WAIT:
            return Wait()  # a running trial's end may enqueue a race, or fail and free its place
        return self._claimed(trial, started)

    def told(self, outcome: TrialOutcome, room: int | None) -> None:
        """A completed trial may make a leader to race on another fold (the intensifier's request,
        lpstudy.study.races), enqueued within `room`, the trials this worker runs yet."""
        if outcome.state != TrialState.COMPLETE or not self.spec.race:
            return
        raced = enqueue_races(self.storage, self.study, self.spec, room)  # the leaders' next folds
        if raced:
            self.say(f"{raced} leading configuration(s) enqueued on another fold")

    def _past_race_reserve(self, done: int) -> bool:
        """Whether this worker, free now, takes only races (lpstudy.design.intensify.RaceReserve, the
        rule the replay benchmark keeps): past (1 − race_reserve) of the run its command started
        it for (WorkerOptions.run_budget: every worker's trials since, the running ones too), else of
        its own --n-trials (the trials it ran), or of the study's n_trials target counting the
        running trials as taken. Only a budget larger than the spread phase keeps one: a run that is
        all spread phase (search's first `--n-trials 8`) has no room for a race
        (lpstudy.study.races.enqueue_races keeps the waiting trials within the run) and runs its
        spread points. Never for a comparison's arm (race_reserve)."""
        opts, spec, storage, study = self.options, self.spec, self.storage, self.study
        rule = spec.race_reserve_rule()
        if not self.race_reserve or rule.share <= 0 or not spec.space.searched:
            return False
        taken = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        if opts.run_budget is not None:
            start, total = opts.run_budget
            if total > spec.spread_trials and rule.only_races(storage.count_trials(study, taken) - start, total):
                return True
        elif opts.n_trials is not None and opts.n_trials > spec.spread_trials and rule.only_races(done, opts.n_trials):
            return True
        if spec.n_trials is None or spec.n_trials <= spec.spread_trials:
            return False
        return rule.only_races(storage.count_trials(study, taken), spec.n_trials)


@dataclass
class GridCells(StudySource):
    _enqueue_seen: tuple[int, float] | None = field(default=None, repr=False)  # (trials, when first seen)

    def claim(self, done: int) -> Claim:
        self._fail_stale()
        started = time.monotonic()
        trial = pop_waiting_trial(self.study, self.storage)
        if trial is not None:
            return self._claimed(trial, started)
        if self.spec.until_decided:
            return StageOver()  # the verdicts decide what comes next (lpstudy.study.stages)
        if self.storage.count_trials(self.study, (TrialState.RUNNING,)):
            return Wait()  # a running cell may yet fail and come back
        missing = self._cells_not_enqueued()
        if missing is None:
            return Wait()  # its creator is still enqueuing the grid
        return Done(missing or "no grid cell left")

    def _cells_not_enqueued(self) -> str | None:
        """Whether a grid with nothing waiting or running is done: '' when every cell has had a
        trial; None while its creator is still enqueuing cells (a grid study's trials are its cells
        and their retries, so fewer trials than cells means cells still to come: a worker started
        beside `replicate` must not stop at the first empty look); the reason to stop when none came
        for ENQUEUE_WAIT_S. One count, not a read of the trials."""
        cells = len(self.spec.space.grid_cells())
        n = self.storage.count_trials(self.study, tuple(TrialState))
        if n >= cells:
            return ""
        now = time.monotonic()
        if self._enqueue_seen is None or self._enqueue_seen[0] != n:
            self._enqueue_seen = (n, now)
        if now - self._enqueue_seen[1] < ENQUEUE_WAIT_S:
            return None
        return (f"{n} of the grid's {cells} cells are enqueued and none came for {ENQUEUE_WAIT_S:.0f} s "
                "(its creator stopped?); run `lpstudy replicate` again to enqueue the rest")


class OneStudy:
    """The decider of a worker on one study without stages (a search, a replicate, a grid): its
    trials as its source gives them (SearchTrials, GridCells)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source: StudySource | None = None

    def start(self, sources: Sources) -> str:
        self.source = sources.open(self.name)
        return self.source.describe()

    def claim(self, done: int) -> Claim:
        assert self.source is not None, "start() opens the study"
        return self.source.claim(done)

    def next(self, done: int) -> Decision:
        return unstaged(self.claim(done))
