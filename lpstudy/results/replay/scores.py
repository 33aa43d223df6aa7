"""A replay's traces scored two ways, each with its interval, per method over seeds.

**What the user gets** (the ranking since issue 45): the configuration each method returns at the end
of the budget, scored by its loss averaged over all the grid's folds (the best estimate of its
expected loss, as HPOBench and YAHPO score an incumbent), the same target for every method whatever
folds it tuned or raced on:

- regret: that mean loss minus the best configuration's mean loss, in nats (per seed; the median
  and the mean, which ranks: where most seeds return the best configuration the medians tie at 0);
- hold: the share of seeds whose returned configuration lies within HOLD_MARGIN (2 %) of the best
  mean loss, a margin fixed in advance (1 %, HOLD_MARGIN_TIGHT, as a second column), with its Wilson
  interval. No grid of the suite has folds that no method sees (a race may measure every fold), so
  no held-out-fold score is given; a grid with more folds than `race_folds` would have them.

**Search efficiency**: did the search find what its tuning fold rewards, and at what compute. Seed
s tunes on fold f (lpstudy.results.replay.traces.tuning_fold); the configuration it returns is its best
trial on fold f, so it is judged against fold f's own best configuration:

- reach: at the end of the budget, the returned configuration's loss on fold f lies within ε of
  the best loss on fold f (the share of seeds, with its Wilson 95 % interval). The returned
  configuration is the best so far on fold f, so its loss there never rises: a seed within ε once
  is within ε at the end;
- F: the fraction of the full grid's compute (every configuration on every fold, to its end)
  spent when the returned configuration first lies within ε (∞ where it never does within the
  budget); the median over seeds with a percentile-bootstrap 95 % interval (Efron & Tibshirani,
  "An Introduction to the Bootstrap", 1993; scipy.stats.bootstrap), and the share of seeds within
  ε by TARGET_F.

**Generalisation**: the tuned configuration's loss on the folds it was not tuned on: at the end of
the budget, its mean loss over the other folds within ε of the best configuration's mean there
(share, Wilson interval), and by how much it misses that best (median). A method that runs every
configuration on every fold (the Wilcoxon pruner's) tunes on their mean: there is no other fold,
and both scores read the mean over all folds.

"ever within ε" is the score before issue 37, kept as a second column: the returned configuration
was, at some point of the budget, within ε of the best mean over all folds.

ε: the grid's pooled fold spread (grid_table.GridTable.epsilon), at least 0.5 % of the best loss.
Wilson's interval: Wilson, "Probable inference, the law of succession, and statistical
inference", JASA 1927 (statsmodels' proportion_confint). The paired tests over seeds that tell two
methods apart (methods share seeds, hence folds): McNemar's exact test on reach (a binomial test on
the discordant seeds; McNemar, Psychometrika 1947) and a sign test on F.

No torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lpstudy.intervals import wilson_interval
from lpstudy.results.replay.grid_table import GridTable
from lpstudy.results.replay.traces import BUDGET, MAX_TRIALS, RANDOM, Trace, run_traces, tuning_fold
from lpstudy.results.replay.methods import Method, default_method
from lpstudy.results.replay.result_types import BestConfig, DefaultVsRandom, GridReplay, MethodRow, PerSeed

CURVE_POINTS = 201  # compute fractions at which the regret curves are sampled
TARGET_F = 0.10  # issue 16's goal for the default: within ε by this fraction of the grid's compute
HOLD_MARGIN = 0.02  # issue 45: the returned configuration's all-fold loss within 2 % of the best's
HOLD_MARGIN_TIGHT = 0.01
HOLD_GOAL = 0.80  # issue 45's goal for the default: within HOLD_MARGIN in this share of seeds
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000


def median_interval(values: list[float]) -> tuple[float, float]:
    """A percentile-bootstrap 95 % interval of the median (∞ counts as a value above every other)."""
    from scipy.stats import bootstrap

    data = np.asarray(values, dtype=float)
    if len(data) < 2 or np.all(data == data[0]):
        return float(np.median(data)), float(np.median(data))
    finite_top = np.max(data[np.isfinite(data)]) if np.isfinite(data).any() else 0.0
    stand_in = np.where(np.isinf(data), finite_top + 1e9, data)  # the bootstrap's arithmetic needs finite numbers
    result = bootstrap((stand_in,), np.median, confidence_level=CONFIDENCE, n_resamples=BOOTSTRAP_RESAMPLES,
                       method="percentile", random_state=0, vectorized=True)
    low, high = (float(x) for x in (result.confidence_interval.low, result.confidence_interval.high))
    return (math.inf if low > finite_top else low), (math.inf if high > finite_top else high)


def mcnemar_p(a: list[bool], b: list[bool]) -> float:
    """McNemar's exact test of two methods' reach on the same seeds: two-sided binomial test of the
    seeds where exactly one of them reached ε (1.0 where none differ)."""
    from scipy.stats import binomtest

    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    return 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


def sign_p(a: list[float], b: list[float]) -> float:
    """A two-sided sign test of two methods' F on the same seeds (ties, ∞ against ∞ among them, left out)."""
    from scipy.stats import binomtest

    lower = sum(1 for x, y in zip(a, b) if x < y)
    higher = sum(1 for x, y in zip(a, b) if x > y)
    return 1.0 if lower + higher == 0 else float(binomtest(lower, lower + higher, 0.5).pvalue)


@dataclass
class MethodScore:
    method: Method
    f: list[float]  # per seed: search efficiency's compute; inf where ε was not reached within the budget
    general_excess: list[float]  # per seed: the tuned configuration's miss on the other folds (inf: none returned)
    ever: list[bool]  # per seed: ever within ε of the best mean over all folds (the score before issue 37)
    end_regret: list[float]  # per seed, at the end of the budget (normalised, mean over all folds)
    curve: dict[str, list[float]]  # "median", "q25", "q75" of the regret at `fractions`
    trials: float  # median trials per seed
    pruned_share: float  # pruned trials / trials, over all seeds
    capped_share: float = 0.0  # seeds stopped at the trial cap before their budget was spent
    epsilon: float = 0.0
    returned: list[int] = field(default_factory=list)  # per seed: the configuration returned at the end (-1: none)
    regret_nats: list[float] = field(default_factory=list)  # per seed: its all-fold mean loss − the best's (inf: none)
    best_loss: float = 0.0  # the best configuration's mean loss over all folds
    table: GridTable | None = field(default=None, repr=False)
    spent_share: float = 0.0  # the median compute spent per seed, as a fraction of the grid's
    workers: int = 1  # the simulated workers that ran each seed (traces.replay_one)
    chosen_at: list[float] = field(default_factory=list)  # per seed: simulated seconds to the final choice
    clock_end: list[float] = field(default_factory=list)  # per seed: simulated seconds to the last trial's end
    race_share: float = 0.0  # the races' compute over all the compute, over all seeds
    duplicate_share: float = 0.0  # compute on a configuration and fold already run or running, over all of it

    def holds(self, margin: float = HOLD_MARGIN) -> list[bool]:
        """Per seed: the returned configuration's all-fold mean loss within `margin` × the best's."""
        return [r <= margin * self.best_loss for r in self.regret_nats]

    def hold_share(self, margin: float = HOLD_MARGIN) -> float:
        return float(np.mean(self.holds(margin)))

    def hold_ci(self, margin: float = HOLD_MARGIN) -> tuple[float, float]:
        return wilson_interval(sum(self.holds(margin)), len(self.regret_nats), CONFIDENCE)

    @property
    def returned_configs(self) -> list[dict[str, Any] | None]:
        """Per seed: the returned configuration as the grid stores it ({p, lr, gain_init}; None: none)."""
        if self.table is None:
            return []
        return [None if c < 0 else dict(zip(self.table.params, self.table.configs[c])) for c in self.returned]

    @property
    def regret_median(self) -> float:
        return float(np.median(self.regret_nats))

    @property
    def regret_mean(self) -> float:
        return float(np.mean(self.regret_nats))

    @property
    def reach(self) -> list[bool]:
        """Per seed: within ε of the tuning fold's best at the end of the budget."""
        return [math.isfinite(f) for f in self.f]

    @property
    def general(self) -> list[bool]:
        return [x <= self.epsilon for x in self.general_excess]

    @property
    def reach_share(self) -> float:
        return float(np.mean(self.reach))

    @property
    def reach_ci(self) -> tuple[float, float]:
        return wilson_interval(sum(self.reach), len(self.f), CONFIDENCE)

    @property
    def general_share(self) -> float:
        return float(np.mean(self.general))

    @property
    def general_ci(self) -> tuple[float, float]:
        return wilson_interval(sum(self.general), len(self.f), CONFIDENCE)

    @property
    def ever_share(self) -> float:
        return float(np.mean(self.ever))

    @property
    def f_median(self) -> float:
        return float(np.median(self.f))

    @property
    def f_ci(self) -> tuple[float, float]:
        return median_interval(self.f)

    def share_within(self, fraction: float) -> float:
        """The share of seeds within ε by `fraction` of the grid's compute."""
        return float(np.mean([f <= fraction for f in self.f]))

    @property
    def f_iqr(self) -> tuple[float, float]:
        ordered = sorted(self.f)  # the order statistics: NumPy interpolates ∞ − x into NaN
        n = len(ordered)
        return ordered[int(math.floor(0.25 * (n - 1)))], ordered[int(math.ceil(0.75 * (n - 1)))]

    def row(self, default: Method | None) -> MethodRow:
        """Its row of the grid's results (what `--json` writes of it); `default`: search's default method."""
        q25, q75 = self.f_iqr
        excess = float(np.median(self.general_excess))
        return MethodRow(
            name=self.method.name, sampler=self.method.sampler, pruner=self.method.pruner,
            spread=self.method.spread, seeds=len(self.f),
            reach_share=self.reach_share, reach_ci=list(self.reach_ci),
            f_median=_finite(self.f_median), f_ci=[_finite(x) for x in self.f_ci],
            f_iqr=[_finite(q25), _finite(q75)], target_share=self.share_within(TARGET_F),
            general_share=self.general_share, general_ci=list(self.general_ci),
            general_excess_median=_finite(excess), ever_share=self.ever_share,
            trials_median=self.trials, pruned_share=self.pruned_share, capped_share=self.capped_share,
            end_regret_median=float(np.median(self.end_regret)), default=self.method == default,
            race=self.method.race, spent_share=self.spent_share,
            hold_share=self.hold_share(), hold_ci=list(self.hold_ci()),
            hold_tight_share=self.hold_share(HOLD_MARGIN_TIGHT),
            hold_tight_ci=list(self.hold_ci(HOLD_MARGIN_TIGHT)),
            regret_nats_median=_finite(self.regret_median), regret_nats_mean=_finite(self.regret_mean),
            regret_nats_ci=[_finite(x) for x in median_interval(self.regret_nats)],
            workers=self.workers, chosen_at_median=_median_or_none(self.chosen_at),
            clock_end_median=_median_or_none(self.clock_end), race_share=self.race_share,
            duplicate_share=self.duplicate_share,
            per_seed=PerSeed(reach=[int(x) for x in self.reach], f=[_finite(x) for x in self.f],
                             general=[int(x) for x in self.general], hold=[int(x) for x in self.holds()],
                             returned=self.returned_configs, regret=[_finite(x) for x in self.regret_nats],
                             chosen_at=[_finite(x) if x == x else None for x in self.chosen_at]))


def rank_key(score: MethodRow) -> tuple[float, float, float]:
    """How methods rank on one grid: on what the user gets, the higher share of seeds within 2 % of
    the best all-fold loss, then the lower mean regret in nats (the mean: where most seeds return the
    best configuration the medians tie at 0, and the seeds that do not are what tells two methods
    apart), then the lower median F."""
    f, regret = score.f_median, score.regret_nats_mean
    return -score.hold_share, math.inf if regret is None else regret, math.inf if f is None else f


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

    def report(self) -> GridReplay:
        """What `lpstudy replay` prints and `--json` writes: the grid, its methods (ranked: rank_key),
        ε, the best configuration, the default against random search."""
        best = self.table.configs[self.table.best_config()]
        ranked = sorted((s.row(self.default) for s in self.scores), key=rank_key)
        versus = default_against_random(self)
        return GridReplay(
            grid=self.table.shape(),
            best=BestConfig(config=dict(zip(self.table.params, best)), loss=self.best_loss, epsilon=self.epsilon),
            fold_spread=self.table.fold_spread(), budget=self.budget, seeds=len(self.seeds),
            methods=[dataclasses.replace(m, rank=rank) for rank, m in enumerate(ranked, start=1)],
            workers=max((sc.workers for sc in self.scores), default=1),
            rank_correlation={str(k): v for k, v in self.table.rank_correlations().items()},
            default_vs_random=None if versus is None else DefaultVsRandom(**versus))

    def to_json(self) -> dict[str, Any]:
        """The `--json` object (report().to_plain())."""
        return self.report().to_plain()


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _median_or_none(values: list[float]) -> float | None:
    kept = [x for x in values if math.isfinite(x)]
    return float(np.median(kept)) if kept else None


def regret_of(table: GridTable) -> np.ndarray:
    """Each configuration's normalised regret over all folds (index -1, nothing returned yet: 1)."""
    losses = table.config_losses()
    best, worst = losses.min(), losses.max()
    span = worst - best if worst > best else 1.0
    return np.append((losses - best) / span, 1.0)


def fold_losses(table: GridTable) -> np.ndarray:
    """Configurations × folds (in table.folds' order): each run's value."""
    return np.array([[table.run(c, f).value for f in table.folds] for c in range(len(table.configs))])


def targets(table: GridTable, losses: np.ndarray, seed: int, over_folds: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the losses search efficiency judges by: the tuning fold's, or the mean over all folds for a
    method that tunes on all of them; the losses generalisation judges by: the mean over the other
    folds, or again over all). `losses`: fold_losses(table)."""
    if over_folds or len(table.folds) < 2:
        return losses.mean(axis=1), losses.mean(axis=1)
    i = table.folds.index(tuning_fold(table, seed))
    return losses[:, i], np.delete(losses, i, axis=1).mean(axis=1)


def f_of(trace: Trace, table: GridTable, epsilon: float, target: np.ndarray | None = None,
         budget_steps: float = math.inf) -> float:
    """The fraction of the grid's compute spent when the returned configuration is first within ε
    of the best of `target` (default: each configuration's mean over all folds); ∞ if it never is
    within `budget_steps`."""
    losses = table.config_losses() if target is None else target
    best = losses.min()
    for spent, config in zip(trace.spent, trace.returned):
        if spent > budget_steps:
            break
        if config >= 0 and losses[config] - best <= epsilon:
            return spent / table.steps_total
    return math.inf


def returned_at(trace: Trace, steps: np.ndarray) -> np.ndarray:
    """The configuration returned once `steps` had been spent (after the last trial that finished
    by then; -1 before any)."""
    if not trace.spent:
        return np.full(len(steps), -1)
    done = np.searchsorted(np.asarray(trace.spent), steps, side="right") - 1
    return np.where(done >= 0, np.asarray(trace.returned)[np.maximum(done, 0)], -1)


def regret_at(trace: Trace, regrets: np.ndarray, steps: np.ndarray) -> np.ndarray:
    return regrets[returned_at(trace, steps)]


def score_method(table: GridTable, method: Method, traces: list[Trace], seeds: list[int], budget: float,
                 epsilon: float, fractions: np.ndarray) -> MethodScore:
    total = table.steps_total
    budget_steps = budget * total
    regrets = regret_of(table)
    by_fold = fold_losses(table)
    means = by_fold.mean(axis=1)
    f, excess, ever, end, returned, regret = [], [], [], [], [], []
    for trace, seed in zip(traces, seeds):
        efficiency, general = targets(table, by_fold, seed, method.over_folds)
        f.append(f_of(trace, table, epsilon, efficiency, budget_steps))
        last = int(returned_at(trace, np.array([budget_steps]))[0])
        excess.append(math.inf if last < 0 else float(general[last] - general.min()))
        ever.append(math.isfinite(f_of(trace, table, epsilon, means, budget_steps)))
        end.append(float(regrets[last]))
        returned.append(last)
        regret.append(math.inf if last < 0 else float(means[last] - means.min()))
    curves = np.array([regret_at(t, regrets, fractions * total) for t in traces])
    trials = [t.trials for t in traces]
    spent_all = sum(t.spent[-1] if t.spent else 0 for t in traces) or 1
    return MethodScore(
        method=method, f=f, general_excess=excess, ever=ever, end_regret=end,
        curve={"median": np.median(curves, axis=0).tolist(), "q25": np.percentile(curves, 25, axis=0).tolist(),
               "q75": np.percentile(curves, 75, axis=0).tolist()},
        trials=float(np.median(trials)), pruned_share=sum(t.pruned for t in traces) / max(1, sum(trials)),
        capped_share=float(np.mean([t.capped for t in traces])), epsilon=epsilon,
        returned=returned, regret_nats=regret, best_loss=float(means.min()),
        spent_share=float(np.median([min(t.spent[-1] if t.spent else 0, budget_steps) for t in traces])) / total,
        table=table, workers=max((t.workers for t in traces), default=1), chosen_at=[t.chosen_at for t in traces],
        clock_end=[t.clock[-1] if t.clock else math.nan for t in traces],
        race_share=sum(t.race_steps for t in traces) / spent_all,
        duplicate_share=sum(t.duplicate_steps for t in traces) / spent_all)


def score(table: GridTable, traces: dict[Method, list[Trace]], budget: float, seeds: list[int]) -> ReplayResult:
    epsilon = table.epsilon()
    losses = table.config_losses()
    fractions = np.linspace(0.0, budget, CURVE_POINTS)
    # a method may hold more seeds than `seeds` (a cache that ran some methods longer): seeds 0, 1, ...
    scores = [score_method(table, m, runs, seeds if len(runs) == len(seeds) else list(range(len(runs))), budget,
                           epsilon, fractions) for m, runs in traces.items()]
    return ReplayResult(table=table, budget=budget, seeds=seeds, scores=scores, fractions=fractions.tolist(),
                        epsilon=epsilon, best_loss=float(losses.min()), worst_loss=float(losses.max()),
                        traces=traces, default=default_method())


def default_against_random(result: ReplayResult) -> dict[str, Any] | None:
    """The default method at its median F against random search (no pruner) given twice that
    compute: each one's share of seeds within ε (search efficiency) by then."""
    if result.default is None:
        return None
    default, random = result.score(result.default), result.score(RANDOM)
    if default is None or random is None or not math.isfinite(default.f_median):
        return None
    b = default.f_median
    return {"budget": b, "random_budget": 2 * b,
            "default_reach_share": default.share_within(b), "random_reach_share": random.share_within(2 * b),
            "random_over_default_f": random.f_median / b if b > 0 else None,
            "target_f": TARGET_F, "default_target_share": default.share_within(TARGET_F),
            "random_twice_target_share": random.share_within(2 * TARGET_F)}


def run_replay(table: GridTable, methods: list[Method], seeds: list[int], budget: float = BUDGET, jobs: int = 1,
               max_trials: int = MAX_TRIALS, on_done: Callable[[Method, int], None] | None = None,
               workers: int = 1) -> ReplayResult:
    """Every method on every seed with `workers` simulated workers, each seed allowed `budget` × the
    grid's compute (replay.run_traces); scored."""
    done = run_traces(table, [(m, s) for m in methods for s in seeds], budget, jobs, max_trials,
                      None if on_done is None else lambda m, s, _trace: on_done(m, s), workers)
    return score(table, {m: [done[(m, s)] for s in seeds] for m in methods}, budget, seeds)
