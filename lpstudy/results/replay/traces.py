"""The replay benchmark: what a search method spends to find a grid's best configuration.

A sampler and a pruner (methods.Method) run against a table of real learning curves
(grid_table.GridTable) instead of training, through Optuna's real ask/tell and
`trial.report`/`should_prune`: each trial's parameters, sampled by lpstudy's own search space
(the grid's ranges), map to the nearest grid configuration, whose stored curve on the tuning fold
is reported evaluation by evaluation; a pruned trial pays only the steps it ran, a completed one
the steps of its whole run. Many seeds; seed s tunes on fold s mod K, so the folds take turns.

Each (method, seed) gives a Trace: after each trial, the compute spent and the configuration the
method would return (lpstudy's best trial, lpstudy.design.best: lowest value on the tuning fold,
never a diverged run, the earlier on a tie). lpstudy.results.replay.scores scores traces;
code_version() and Optuna's version key a cache of them (benchmarks/bench_search_suite.py).

Asynchronous workers (`workers` W, `lpstudy replay --workers W`): W workers share one simulated
clock (clock.TimeModel: each run's stored seconds per step), so the sampler asks beside the trials
still running, races are enqueued by one worker and taken by the next to free, and the pruner
compares against rungs as they stand at that moment: what a study run by W workers sharing one
database does, through the same sampler, pruner, spread phase and Intensifier. W = 1 is the
sequential replay, trial for trial.

No torch (the GP sampler imports it through Optuna when it runs).
"""

from __future__ import annotations

import heapq
import math
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from lpstudy.design.best import is_candidate
from lpstudy.design.intensify import Evaluation, Intensifier, RaceReserve
from lpstudy.results.replay.clock import TimeModel
from lpstudy.results.replay.grid_table import FOLD, GridTable
from lpstudy.results.replay.methods import Method, build_pruner, build_sampler
from lpstudy.design.space import SearchSpace
from lpstudy.design.spec import StudySpec
from lpstudy.study.spread import enqueue_spread
from lpstudy.values import RACE_FOLD_ATTR, json_safe

RANDOM = Method("random", "none")
MAX_TRIALS = 2000  # per seed, at most
STALL = 25  # trials in a row pruned at one configuration: the method is stuck there
BUDGET = 0.4  # of the full grid's compute, per seed


@dataclass
class Trace:
    """One method on one seed: after each trial (in the order trials finish), the compute spent so
    far, the configuration the method would return (-1: none yet) and the simulated clock (seconds
    since the search started, lpstudy.results.replay.clock). Stored compactly (to_plain) as the
    trials where the returned configuration changed and the last one: what every score reads."""

    spent: list[int] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    clock: list[float] = field(default_factory=list)
    pruned: int = 0
    capped: bool = False  # stopped (stalled, or at max_trials) before the budget was spent
    workers: int = 1
    race_steps: int = 0  # the compute the races' trials spent
    duplicate_steps: int = 0  # the compute spent on a configuration and fold already run or running
    last: list[tuple[int, bool]] = field(default_factory=list, repr=False)  # (config, pruned) of each trial
    n_trials: int | None = None  # set where spent/returned hold only the changes (from_plain)

    @property
    def trials(self) -> int:
        return len(self.spent) if self.n_trials is None else self.n_trials

    @property
    def chosen_at(self) -> float:
        """The simulated seconds at which the search first returned the configuration it returns at
        the end (and kept it after): its wall-clock time to its final choice (nan: no trial)."""
        if not self.returned:
            return math.nan
        i = len(self.returned) - 1
        while i > 0 and self.returned[i - 1] == self.returned[-1]:
            i -= 1
        return self.clock[i] if self.clock else math.nan

    def to_plain(self) -> dict[str, Any]:
        keep = [i for i in range(len(self.spent))
                if i == 0 or i == len(self.spent) - 1 or self.returned[i] != self.returned[i - 1]]
        return {"spent": [self.spent[i] for i in keep], "returned": [self.returned[i] for i in keep],
                "clock": [round(self.clock[i], 3) for i in keep if i < len(self.clock)],
                "trials": self.trials, "pruned": self.pruned, "capped": self.capped, "workers": self.workers,
                "race_steps": self.race_steps, "duplicate_steps": self.duplicate_steps}

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "Trace":
        return cls(spent=list(plain["spent"]), returned=list(plain["returned"]), clock=list(plain.get("clock", [])),
                   pruned=plain["pruned"], capped=plain["capped"], workers=int(plain.get("workers", 1)),
                   race_steps=int(plain.get("race_steps", 0)), duplicate_steps=int(plain.get("duplicate_steps", 0)),
                   n_trials=plain["trials"])


def tuning_fold(table: GridTable, seed: int) -> int:
    """The fold seed `seed` tunes on: the folds take turns."""
    return table.folds[seed % len(table.folds)]


def replay_spec(table: GridTable, fold: int, sampler: str = "tpe", pruner: str = "median") -> StudySpec:
    """The spec of a search over the grid's ranges (lr and gain_init on a log scale, as a study's
    space has them), with the grid's fixed fields and the tuning fold: what `lpstudy create`
    would make for this search, so the sampler and pruner are built as a study builds them."""
    mapping: dict[str, Any] = {k: {"value": v} for k, v in table.fixed.items()}
    mapping.update(table.ranges())
    mapping[FOLD] = {"value": fold}
    spec = StudySpec(space=SearchSpace.from_mapping(mapping), preset=table.preset, sampler=sampler, pruner=pruner)
    return spec.validate()


# -- one method, one seed ----------------------------------------------------------------------

@dataclass
class _Running:
    """A trial in flight on a simulated worker: its run, a generator that reports it step by step
    (each `next` gives the seconds since the trial started at which it reports next), and what it
    will cost if it runs to its end."""

    trial: optuna.Trial
    config: int
    fold: int
    steps: Generator[float, None, tuple[int, float | None, TrialState, bool]]
    started: float
    full_cost: int
    raced: bool  # a race's trial (enqueued by the Intensifier)
    duplicate: bool  # its configuration ran, or was running, on its fold when it started


def replay_one(table: GridTable, method: Method, seed: int, budget_steps: int,
               max_trials: int = MAX_TRIALS, workers: int = 1, per_trial_s: float = 0.0) -> Trace:
    """Run `method` with `seed` against the table until it has spent `budget_steps`, with `workers`
    workers on one simulated clock (lpstudy.results.replay.clock: each run takes its stored time per
    step). A worker that frees asks the study for its next trial (a waiting one first: the spread
    phase, then races, as Optuna's ask pops them), while the trials the others run are RUNNING in the
    study, as the sampler of a real study sees them (TPE's constant liar); each trial reports its
    curve evaluation by evaluation at the time the run reaches it, so a pruner compares against the
    rungs as they stand then. A worker asks a trial only while the compute spent and the rest of the
    running trials' runs, were they to run to their end, stay below `budget_steps`: the total
    compute is the budget at any number of workers (give or take one trial, as at one worker).
    With one worker this is the sequential replay, trial for trial.

    It stops earlier when it has stalled: a sampler that ignores pruned trials (the GP, CMA-ES)
    proposes the configuration it just saw pruned again and again, its model unchanged; after STALL
    such trials in a row the rest of the budget would go the same way, so the configuration it
    returns stays what it is. `max_trials` bounds the trials of a seed all the same.

    A method that races (`method.race`) does what a study's worker does: after each finished trial
    it asks the study's Intensifier (lpstudy.design.intensify) which leaders to run on another fold,
    none already enqueued or running, enqueues each as a trial with that fold (the next ask pops it
    before sampling, whichever worker asks), and returns the configuration the Intensifier returns;
    every evaluation counts against the budget. With `method.reserve`, once the compute spent and
    running (to its end) reaches (1 − reserve) of the budget, a worker takes only a race (a spread
    trial still waiting then is left): the rest of the budget is the races', so that a wave of
    trials that many workers started at once still has its leaders raced."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # samplers' warnings (the GP's: one a trial) say nothing here
    fold = tuning_fold(table, seed)
    spec = replay_spec(table, fold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(study_name=f"replay-{method.name}-{seed}", direction="minimize",
                                    sampler=build_sampler(method, spec, seed), pruner=build_pruner(method, spec))
    enqueue_spread(study, spec.space, method.spread, seed)
    intensifier = Intensifier.of(method.race, method.race_folds, table.folds.index(fold), len(table.folds))
    clock = TimeModel.of(table, per_trial_s)  # per_trial_s: the worker's own time a trial (clock.TimeModel)
    evaluations: list[Evaluation] = []
    params_of: dict[int, dict[str, Any]] = {}  # each configuration's parameters as first sampled
    pending: set[tuple[int, int]] = set()  # (configuration, fold index) enqueued and not yet finished
    seen: set[tuple[int, int]] = set()  # (configuration, fold) run or running: a second run is a duplicate
    rng = np.random.default_rng(seed)
    trace = Trace(workers=workers)
    spent, best = 0, (math.inf, -1)  # (value, config) of the best candidate so far (a method over folds)
    reserve = RaceReserve(method.reserve if method.race else 0.0)  # the worker's rule (lpstudy.design.intensify)
    running: dict[int, _Running] = {}  # by worker
    events: list[tuple[float, int, int]] = []  # (time, order, worker): the next report of a worker's trial
    order = 0
    now = 0.0
    while True:
        free = [w for w in range(workers) if w not in running]
        while free and not trace.capped and spent + sum(r.full_cost for r in running.values()) < budget_steps:
            if trace.trials + len(running) >= max_trials or _stalled(trace):
                trace.capped = True
                break
            if (reserve.only_races(spent + sum(r.full_cost for r in running.values()), budget_steps)
                    and not _race_waits_first(study)):
                break  # past the sampled share (method.reserve): only a race is taken
            worker = free.pop(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trial = study.ask()
                overrides = spec.space.suggest(trial)
            config = table.nearest({name: json_safe(overrides[name]) for name in table.params})
            params_of.setdefault(config, dict(trial.params))
            raced = trial.user_attrs.get(RACE_FOLD_ATTR)
            run_fold = fold if raced is None else table.folds[int(raced)]
            if method.over_folds:
                folds = [int(f) for f in rng.permutation(table.folds)]
                steps = _over_folds(table, clock, trial, config, folds)
                full = sum(table.run(config, f).steps_run for f in folds)
            else:
                steps = _along_curve(table, clock, trial, config, run_fold)
                full = table.run(config, run_fold).steps_run
            duplicate = (config, run_fold) in seen  # run before, or running now on another worker
            seen.add((config, run_fold))
            running[worker] = _Running(trial, config, run_fold, steps, now, full, raced is not None, duplicate)
            order += 1
            heapq.heappush(events, (now + next(steps), order, worker))
        if not events:
            break
        now, _, worker = heapq.heappop(events)
        r = running[worker]
        try:
            order += 1
            heapq.heappush(events, (r.started + r.steps.send(None), order, worker))
            continue
        except StopIteration as end:
            cost, value, state, diverged = end.value
        del running[worker]
        trial = r.trial
        trial.set_user_attr("diverged", diverged)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if state == TrialState.PRUNED:
                study.tell(trial, state=TrialState.PRUNED)
                trace.pruned += 1
            else:
                study.tell(trial, value)
        spent += cost
        trace.race_steps += cost if r.raced else 0
        trace.duplicate_steps += cost if r.duplicate else 0
        if method.over_folds:
            if state == TrialState.COMPLETE and is_candidate("COMPLETE", value, diverged) and value < best[0]:
                best = (value, r.config)
            returned = best[1]
        else:
            index = table.folds.index(r.fold)
            pending.discard((r.config, index))
            if state == TrialState.COMPLETE and value is not None:
                evaluations.append(Evaluation(r.config, index, float(value), bool(diverged)))
            for key, f in intensifier.requests(evaluations, pending):
                study.enqueue_trial(params_of[key], user_attrs={RACE_FOLD_ATTR: f})
                pending.add((key, f))
            chosen = intensifier.returned(evaluations)
            returned = -1 if chosen is None else int(chosen.key)
        trace.spent.append(spent)
        trace.returned.append(returned)
        trace.clock.append(now)
        trace.last.append((r.config, state == TrialState.PRUNED))
    return trace


def _race_waits_first(study: optuna.Study) -> bool:
    """Whether a race waits; the spread trials still waiting before it (the next ask pops the
    oldest WAITING trial) are asked and failed first, unrun: past the sampled share only races run."""
    waiting = sorted(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)), key=lambda t: t.number)
    if not any(RACE_FOLD_ATTR in t.user_attrs for t in waiting):
        return False
    for t in waiting:
        if RACE_FOLD_ATTR in t.user_attrs:
            return True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.tell(study.ask(), state=TrialState.FAIL)
    return True


def _stalled(trace: Trace) -> bool:
    recent = trace.last[-STALL:]
    return len(recent) == STALL and all(pruned for _, pruned in recent) and len({c for c, _ in recent}) == 1


def _along_curve(table: GridTable, clock: TimeModel, trial: optuna.Trial, config: int, fold: int
                 ) -> Generator[float, None, tuple[int, float | None, TrialState, bool]]:
    """Report the run's curve evaluation by evaluation, as the worker does, each when the run reaches
    it (the seconds since the trial started, yielded before each report); stop where pruned."""
    run = table.run(config, fold)
    for step, loss in zip(run.steps, run.val_loss):
        yield clock.per_trial_s + clock.seconds(config, fold, step)
        trial.report(loss, step)
        if trial.should_prune():
            return step, None, TrialState.PRUNED, False
    yield clock.per_trial_s + clock.seconds(config, fold, run.steps_run)
    return run.steps_run, run.value, TrialState.COMPLETE, run.diverged


def _over_folds(table: GridTable, clock: TimeModel, trial: optuna.Trial, config: int, folds: list[int]
                ) -> Generator[float, None, tuple[int, float | None, TrialState, bool]]:
    """Run the configuration fold by fold in the order `folds` (a random permutation), reporting each
    fold's final loss at the fold's number when its run ends (WilcoxonPruner pairs folds across
    trials). A stopped trial tells the mean of the folds it ran, as Optuna's WilcoxonPruner example
    does (so the sampler learns from it), but it is never returned: it was not judged on every fold."""
    cost, elapsed, values, diverged = 0, clock.per_trial_s, [], False
    for fold in folds:
        run = table.run(config, fold)
        elapsed += clock.seconds(config, fold, run.steps_run)
        yield elapsed
        cost += run.steps_run
        values.append(run.value)
        diverged = diverged or run.diverged
        trial.report(run.value, fold)
        if len(values) < len(folds) and trial.should_prune():
            trial.set_user_attr("partial", True)
            return cost, float(np.mean(values)), TrialState.PRUNED, diverged
    return cost, float(np.mean(values)), TrialState.COMPLETE, diverged


def run_traces(table: GridTable, work: list[tuple[Method, int]], budget: float = BUDGET, jobs: int = 1,
               max_trials: int = MAX_TRIALS, on_done: Callable[[Method, int, Trace], None] | None = None,
               workers: int = 1) -> dict[tuple[Method, int], Trace]:
    """Each (method, seed) of `work` replayed with `workers` simulated workers, each seed allowed
    `budget` × the grid's compute; `on_done` hears of each trace as it comes (a cache keeps it)."""
    budget_steps = int(math.ceil(budget * table.steps_total))
    done: dict[tuple[Method, int], Trace] = {}
    if jobs <= 1:
        for m, s in work:
            done[(m, s)] = replay_one(table, m, s, budget_steps, max_trials, workers)
            if on_done:
                on_done(m, s, done[(m, s)])
        return done
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs, initializer=_set_table, initargs=(table,)) as pool:
        futures = {pool.submit(_replay_in_pool, m, s, budget_steps, max_trials, workers): (m, s) for m, s in work}
        for future in as_completed(futures):
            m, s = futures[future]
            done[(m, s)] = future.result()
            if on_done:
                on_done(m, s, done[(m, s)])
    return done


def code_version() -> str:
    """A hash of the source that makes a trace (this module, the methods, the grid table, the space,
    the spread phase, the samplers' and pruners' construction and the best trial's rule): a cache of
    traces is valid while it and Optuna's version are unchanged."""
    import hashlib
    from pathlib import Path

    import lpstudy

    root = Path(lpstudy.__file__).parent
    digest = hashlib.sha256()
    for name in ("results/replay/traces.py", "results/replay/clock.py", "results/replay/methods.py",
                 "results/replay/grid_table.py", "design/space.py",
                 "design/intensify.py",
                 "study/spread.py", "study/studies.py", "design/spec.py", "design/best.py", "training/fields.py",
                 "values.py"):
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


_POOL_TABLE: GridTable | None = None


def _set_table(table: GridTable) -> None:
    global _POOL_TABLE
    _POOL_TABLE = table


def _replay_in_pool(method: Method, seed: int, budget_steps: int, max_trials: int, workers: int) -> Trace:
    assert _POOL_TABLE is not None
    return replay_one(_POOL_TABLE, method, seed, budget_steps, max_trials, workers)
