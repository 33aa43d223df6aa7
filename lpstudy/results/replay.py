"""The replay benchmark: what a search method spends to find a grid's best configuration.

A sampler and a pruner (replay_methods.Method) run against a table of real learning curves
(grid_table.GridTable) instead of training, through Optuna's real ask/tell and
`trial.report`/`should_prune`: each trial's parameters, sampled by lpstudy's own search space
(the grid's ranges), map to the nearest grid configuration, whose stored curve on the tuning fold
is reported evaluation by evaluation; a pruned trial pays only the steps it ran, a completed one
the steps of its whole run. Many seeds; seed s tunes on fold s mod K, so the folds take turns.

Scores, per method over seeds (the returned configuration is lpstudy's best trial,
lpstudy.study.best: lowest value, never a diverged run, the earlier on a tie):

- the normalised regret of the returned configuration, judged by its mean loss over all folds
  (not the fold it was tuned on): (L(c) − L*) / (L_worst − L*), 0 at the grid's best, 1 for the
  worst configuration (and before anything is returned), against cumulative training steps;
- F: the fraction of the full grid's compute (every configuration on every fold, to its end)
  spent when the returned configuration first lies within ε of L*, with ε the larger of the best
  configuration's standard error across folds and 0.5 % of its loss; its median and interquartile
  range over seeds (a seed that never gets there within the budget counts as ∞) and the share of
  seeds that get there;
- a Borda rank: on each seed every method scores the number of methods it beats (by F, then by
  the regret at the end of the budget; ties half), summed over seeds.

No torch (the GP sampler imports it through Optuna when it runs).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from lpstudy.study.best import is_candidate
from lpstudy.results.grid_table import FOLD, GridTable
from lpstudy.results.replay_methods import Method, build_pruner, build_sampler, default_method
from lpstudy.study.space import SearchSpace
from lpstudy.study.spec import StudySpec
from lpstudy.study.spread import enqueue_spread
from lpstudy.values import json_safe

CURVE_POINTS = 201  # compute fractions at which the regret curves are sampled
RANDOM = Method("random", "none")
MAX_TRIALS = 2000  # per seed, at most
STALL = 25  # trials in a row pruned at one configuration: the method is stuck there
BUDGET = 0.4  # of the full grid's compute, per seed
TARGET_F = 0.10  # issue 16's goal for the default: within ε by this fraction of the grid's compute


@dataclass
class Trace:
    """One method on one seed: after each trial, the compute spent so far and the configuration
    the method would return (-1: none yet)."""

    spent: list[int] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    pruned: int = 0
    capped: bool = False  # stopped (stalled, or at max_trials) before the budget was spent
    last: list[tuple[int, bool]] = field(default_factory=list, repr=False)  # (config, pruned) of each trial

    @property
    def trials(self) -> int:
        return len(self.spent)


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

def replay_one(table: GridTable, method: Method, seed: int, budget_steps: int,
               max_trials: int = MAX_TRIALS) -> Trace:
    """Run `method` with `seed` against the table until it has spent `budget_steps`. It stops
    earlier when it has stalled: a sampler that ignores pruned trials (the GP, CMA-ES) proposes
    the configuration it just saw pruned again and again, its model unchanged; after STALL such
    trials in a row the rest of the budget would go the same way, so the configuration it returns
    stays what it is. `max_trials` bounds the trials of a seed all the same."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # samplers' warnings (the GP's: one a trial) say nothing here
    fold = table.folds[seed % len(table.folds)]
    spec = replay_spec(table, fold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(study_name=f"replay-{method.name}-{seed}", direction="minimize",
                                    sampler=build_sampler(method, spec, seed), pruner=build_pruner(method, spec))
    enqueue_spread(study, spec.space, method.spread, seed)
    rng = np.random.default_rng(seed)
    trace = Trace()
    spent, best = 0, (math.inf, -1)  # (value, config) of the best candidate so far
    while spent < budget_steps:
        if trace.trials >= max_trials or _stalled(trace):
            trace.capped = True
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = study.ask()
            overrides = spec.space.suggest(trial)
        config = table.nearest({name: json_safe(overrides[name]) for name in table.params})
        if method.over_folds:
            cost, value, state, diverged = _over_folds(table, trial, config, rng)
        else:
            cost, value, state, diverged = _along_curve(table, trial, config, fold)
        trial.set_user_attr("diverged", diverged)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if state == TrialState.PRUNED:
                study.tell(trial, state=TrialState.PRUNED)
                trace.pruned += 1
            else:
                study.tell(trial, value)
        if state == TrialState.COMPLETE and is_candidate("COMPLETE", value, diverged) and value < best[0]:
            best = (value, config)
        spent += cost
        trace.spent.append(spent)
        trace.returned.append(best[1])
        trace.last.append((config, state == TrialState.PRUNED))
    return trace


def _stalled(trace: Trace) -> bool:
    recent = trace.last[-STALL:]
    return len(recent) == STALL and all(pruned for _, pruned in recent) and len({c for c, _ in recent}) == 1


def _along_curve(table: GridTable, trial: optuna.Trial, config: int, fold: int
                 ) -> tuple[int, float | None, TrialState, bool]:
    """Report the run's curve evaluation by evaluation, as the worker does; stop where pruned."""
    run = table.run(config, fold)
    for step, loss in zip(run.steps, run.val_loss):
        trial.report(loss, step)
        if trial.should_prune():
            return step, None, TrialState.PRUNED, False
    return run.steps_run, run.value, TrialState.COMPLETE, run.diverged


def _over_folds(table: GridTable, trial: optuna.Trial, config: int, rng: np.random.Generator
                ) -> tuple[int, float | None, TrialState, bool]:
    """Run the configuration fold by fold in a random order, reporting each fold's final loss at
    the fold's number (WilcoxonPruner pairs folds across trials). A stopped trial tells the mean
    of the folds it ran, as Optuna's WilcoxonPruner example does (so the sampler learns from it),
    but it is never returned: it was not judged on every fold."""
    cost, values, diverged = 0, [], False
    for fold in rng.permutation(table.folds):
        run = table.run(config, int(fold))
        cost += run.steps_run
        values.append(run.value)
        diverged = diverged or run.diverged
        trial.report(run.value, int(fold))
        if len(values) < len(table.folds) and trial.should_prune():
            trial.set_user_attr("partial", True)
            return cost, float(np.mean(values)), TrialState.PRUNED, diverged
    return cost, float(np.mean(values)), TrialState.COMPLETE, diverged


# -- many methods, many seeds, and the scores ---------------------------------------------------

@dataclass
class MethodScore:
    method: Method
    f: list[float]  # per seed; inf where ε was not reached within the budget
    end_regret: list[float]  # per seed, at the end of the budget
    curve: dict[str, list[float]]  # "median", "q25", "q75" of the regret at `fractions`
    trials: float  # median trials per seed
    pruned_share: float  # pruned trials / trials, over all seeds
    capped_share: float = 0.0  # seeds stopped at the trial cap before their budget was spent
    borda_points: float = 0.0
    borda: int = 0

    @property
    def reach_share(self) -> float:
        return float(np.mean([math.isfinite(f) for f in self.f]))

    @property
    def f_median(self) -> float:
        return float(np.median(self.f))

    def share_within(self, fraction: float) -> float:
        """The share of seeds within ε by `fraction` of the grid's compute."""
        return float(np.mean([f <= fraction for f in self.f]))

    @property
    def f_iqr(self) -> tuple[float, float]:
        q25, q75 = np.percentile(self.f, [25, 75]) if all(map(math.isfinite, self.f)) else _inf_quantiles(self.f)
        return float(q25), float(q75)


def _inf_quantiles(values: list[float]) -> tuple[float, float]:
    """Quartiles of values that may hold ∞ (NumPy interpolates ∞ − x into NaN): the lower order statistic."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered[int(math.floor(0.25 * (n - 1)))], ordered[int(math.ceil(0.75 * (n - 1)))]


@dataclass
class ReplayResult:
    table: GridTable
    budget: float  # fraction of the grid's compute each seed may spend
    seeds: list[int]
    scores: list[MethodScore]
    fractions: list[float]  # where the regret curves are sampled
    epsilon: float
    best_loss: float
    worst_loss: float
    traces: dict[Method, list[Trace]] = field(default_factory=dict)
    default: Method | None = None  # what `lpstudy search` runs for a search of this grid's space

    def score(self, method: Method) -> MethodScore | None:
        return next((s for s in self.scores if s.method == method), None)

    def to_json(self) -> dict[str, Any]:
        """The `--json` object: grid, methods (and ε, the best configuration, default against random)."""
        best = self.table.configs[self.table.best_config()]
        default = self.default
        methods = []
        for s in sorted(self.scores, key=lambda s: s.borda):
            q25, q75 = s.f_iqr
            methods.append({"name": s.method.name, "sampler": s.method.sampler, "pruner": s.method.pruner,
                            "f_median": _finite(s.f_median), "f_iqr": [_finite(q25), _finite(q75)],
                            "reach_share": s.reach_share, "borda": s.borda, "borda_points": s.borda_points,
                            "target_share": s.share_within(TARGET_F),
                            "trials_median": s.trials, "pruned_share": s.pruned_share, "capped_share": s.capped_share,
                            "end_regret_median": float(np.median(s.end_regret)), "default": s.method == default})
        return json_safe({
            "grid": self.table.shape(),
            "best": {"config": dict(zip(self.table.params, best)), "loss": self.best_loss, "epsilon": self.epsilon},
            "budget": self.budget, "seeds": len(self.seeds), "methods": methods,
            "rank_correlation": {str(k): v for k, v in self.table.rank_correlations().items()},
            "default_vs_random": default_against_random(self),
        })


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def regret_of(table: GridTable) -> np.ndarray:
    """Each configuration's normalised regret (index -1, nothing returned yet: 1)."""
    losses = table.config_losses()
    best, worst = losses.min(), losses.max()
    span = worst - best if worst > best else 1.0
    return np.append((losses - best) / span, 1.0)


def f_of(trace: Trace, table: GridTable, epsilon: float) -> float:
    """The fraction of the grid's compute spent when the returned configuration is first within ε
    of the grid's best; ∞ if it never is."""
    losses = table.config_losses()
    best = losses.min()
    for spent, config in zip(trace.spent, trace.returned):
        if config >= 0 and losses[config] - best <= epsilon:
            return spent / table.steps_total
    return math.inf


def regret_at(trace: Trace, regrets: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The regret of the configuration returned once `steps` had been spent (after the last trial
    that finished by then)."""
    done = np.searchsorted(np.asarray(trace.spent), steps, side="right") - 1
    returned = np.where(done >= 0, np.asarray(trace.returned)[np.maximum(done, 0)] if trace.spent else -1, -1)
    return regrets[returned]


def score(table: GridTable, traces: dict[Method, list[Trace]], budget: float, seeds: list[int]) -> ReplayResult:
    regrets = regret_of(table)
    epsilon = table.epsilon()
    losses = table.config_losses()
    total = table.steps_total
    fractions = np.linspace(0.0, budget, CURVE_POINTS)
    scores = []
    for method, runs in traces.items():
        curves = np.array([regret_at(t, regrets, fractions * total) for t in runs])
        trials = [t.trials for t in runs]
        scores.append(MethodScore(
            method=method, f=[f_of(t, table, epsilon) for t in runs],
            end_regret=[float(regret_at(t, regrets, np.array([budget * total]))[0]) for t in runs],
            curve={"median": np.median(curves, axis=0).tolist(), "q25": np.percentile(curves, 25, axis=0).tolist(),
                   "q75": np.percentile(curves, 75, axis=0).tolist()},
            trials=float(np.median(trials)), pruned_share=sum(t.pruned for t in runs) / max(1, sum(trials)),
            capped_share=float(np.mean([t.capped for t in runs]))))
    _borda(scores)
    return ReplayResult(table=table, budget=budget, seeds=seeds, scores=scores, fractions=fractions.tolist(),
                        epsilon=epsilon, best_loss=float(losses.min()), worst_loss=float(losses.max()),
                        traces=traces, default=default_method())


def _borda(scores: list[MethodScore]) -> None:
    """Per seed, a method scores the number of methods it beats (F first, then the regret at the
    end of the budget; a tie is half a win); rank 1 has the most points."""
    if not scores:
        return
    n_seeds = len(scores[0].f)
    for s in scores:
        s.borda_points = 0.0
    for i in range(n_seeds):
        keys = [(s.f[i], s.end_regret[i]) for s in scores]
        for a, s in enumerate(scores):
            s.borda_points += sum(1.0 if keys[a] < keys[b] else 0.5 if keys[a] == keys[b] else 0.0
                                  for b in range(len(scores)) if b != a)
    for rank, s in enumerate(sorted(scores, key=lambda s: (-s.borda_points, s.f_median)), start=1):
        s.borda = rank


def default_against_random(result: ReplayResult) -> dict[str, Any] | None:
    """The default method at its median F against random search (no pruner) given twice that
    compute: each one's median regret there and the share of seeds within ε by then."""
    default, random = result.score(result.default), result.score(RANDOM)
    if default is None or random is None or not math.isfinite(default.f_median):
        return None
    b = default.f_median
    regrets = regret_of(result.table)
    total = result.table.steps_total
    return {"budget": b, "random_budget": 2 * b,
            "default_reach_share": float(np.mean([f <= b for f in default.f])),
            "random_reach_share": float(np.mean([f <= 2 * b for f in random.f])),
            "default_regret_median": _median_regret_at(result, default, b, regrets, total),
            "random_regret_median": _median_regret_at(result, random, 2 * b, regrets, total),
            "random_over_default_f": random.f_median / b if b > 0 else None,
            # at the goal: the default's share of seeds within ε by TARGET_F, random's by twice that
            "target_f": TARGET_F, "default_target_share": default.share_within(TARGET_F),
            "random_twice_target_share": random.share_within(2 * TARGET_F)}


def _median_regret_at(result: ReplayResult, score_: MethodScore, fraction: float, regrets: np.ndarray,
                      total: int) -> float | None:
    traces = result.traces.get(score_.method)
    if not traces or fraction > result.budget:
        return None  # beyond the budget the seeds ran to: not measured
    return float(np.median([regret_at(t, regrets, np.array([fraction * total]))[0] for t in traces]))


def run_replay(table: GridTable, methods: list[Method], seeds: list[int], budget: float = BUDGET, jobs: int = 1,
               max_trials: int = MAX_TRIALS, on_done: Callable[[Method, int], None] | None = None) -> ReplayResult:
    """Every method on every seed, each seed allowed `budget` × the grid's compute; scored."""
    budget_steps = int(math.ceil(budget * table.steps_total))
    work = [(m, s) for m in methods for s in seeds]
    done: dict[tuple[Method, int], Trace] = {}
    if jobs <= 1:
        for m, s in work:
            done[(m, s)] = replay_one(table, m, s, budget_steps, max_trials)
            if on_done:
                on_done(m, s)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, initializer=_set_table, initargs=(table,)) as pool:
            futures = {pool.submit(_replay_in_pool, m, s, budget_steps, max_trials): (m, s) for m, s in work}
            for future in as_completed(futures):
                m, s = futures[future]
                done[(m, s)] = future.result()
                if on_done:
                    on_done(m, s)
    traces = {m: [done[(m, s)] for s in seeds] for m in methods}
    return score(table, traces, budget, seeds)


_POOL_TABLE: GridTable | None = None


def _set_table(table: GridTable) -> None:
    global _POOL_TABLE
    _POOL_TABLE = table


def _replay_in_pool(method: Method, seed: int, budget_steps: int, max_trials: int) -> Trace:
    assert _POOL_TABLE is not None
    return replay_one(_POOL_TABLE, method, seed, budget_steps, max_trials)
