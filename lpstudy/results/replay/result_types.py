"""A replay's results as typed values: what `lpstudy replay` prints and `--json` writes, one grid's
(GridReplay, of MethodRow: lpstudy.results.replay.scores) and a suite's (SuiteReport:
lpstudy.results.replay.suite). Frozen dataclasses whose fields are the JSON's keys, in its order, read
by attribute; `to_plain()` is the JSON (strict: lpstudy.values.json_safe), and `from_plain()` reads a
written one back once (a suite put together from grids replayed one at a time, the benchmarks'
results). Plain Python: no Optuna."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from lpstudy.results.replay.grid_table import GridShape
from lpstudy.values import json_safe


def _plain(value: Any) -> Any:
    return json_safe(dataclasses.asdict(value))


@dataclass(frozen=True)
class PerSeed:
    """One method's scores seed by seed (seed s at index s): what the paired tests over seeds read."""

    reach: list[int]  # within ε of the tuning fold's best at the end of the budget (1) or not (0)
    f: list[float | None]  # the compute spent when first within ε (None: never within the budget)
    general: list[int]  # within ε of the best on the folds it was not tuned on
    hold: list[int]  # the returned configuration's all-fold loss within 2 % of the best's
    returned: list[dict[str, Any] | None]  # the returned configuration ({p, lr, gain_init}; None: none)
    regret: list[float | None]  # its all-fold mean loss minus the best's, in nats (None: none returned)
    chosen_at: list[float | None]  # simulated seconds to the final choice


@dataclass(frozen=True)
class MethodRow:
    """One method's scores on one grid over its seeds (lpstudy.results.replay.scores: what each means)."""

    name: str
    sampler: str
    pruner: str
    spread: int
    seeds: int
    reach_share: float
    reach_ci: list[float]
    f_median: float | None  # None: ∞ (not within ε in most seeds)
    f_ci: list[float | None]
    f_iqr: list[float | None]
    target_share: float  # within ε by TARGET_F of the grid's compute
    general_share: float
    general_ci: list[float]
    general_excess_median: float | None
    ever_share: float
    trials_median: float
    pruned_share: float
    capped_share: float
    end_regret_median: float
    default: bool  # the method `lpstudy search` runs
    race: int
    spent_share: float
    hold_share: float  # within 2 % of the best all-fold loss: what ranks the methods
    hold_ci: list[float]
    hold_tight_share: float
    hold_tight_ci: list[float]
    regret_nats_median: float | None
    regret_nats_mean: float | None
    regret_nats_ci: list[float | None]
    workers: int
    chosen_at_median: float | None
    clock_end_median: float | None
    race_share: float
    duplicate_share: float
    per_seed: PerSeed
    rank: int = 0  # its place on the grid (1: best), given when the grid's methods are ranked

    def to_plain(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> MethodRow:
        return cls(**{**plain, "per_seed": PerSeed(**plain["per_seed"])})


@dataclass(frozen=True)
class BestConfig:
    """The grid's best configuration: its values, its mean loss over the folds, and ε."""

    config: dict[str, Any]
    loss: float
    epsilon: float


@dataclass(frozen=True)
class DefaultVsRandom:
    """The default at its median F against random search given twice that compute."""

    budget: float
    random_budget: float
    default_reach_share: float
    random_reach_share: float
    random_over_default_f: float | None
    target_f: float
    default_target_share: float
    random_twice_target_share: float


@dataclass(frozen=True)
class GridReplay:
    """One grid's replay: `lpstudy replay --json` for one grid (ReplayResult.report())."""

    grid: GridShape  # its size (GridTable.shape)
    best: BestConfig
    fold_spread: float
    budget: float
    seeds: int
    methods: list[MethodRow]  # ranked, best first
    workers: int
    rank_correlation: dict[str, float]  # by step: Spearman's ρ of the loss there with the final loss
    default_vs_random: DefaultVsRandom | None

    def to_plain(self) -> dict[str, Any]:
        return _plain(self)

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> GridReplay:
        versus = plain.get("default_vs_random")
        return cls(grid=GridShape(**plain["grid"]), best=BestConfig(**plain["best"]), fold_spread=plain["fold_spread"],
                   budget=plain["budget"], seeds=plain["seeds"],
                   methods=[MethodRow.from_plain(m) for m in plain["methods"]], workers=plain.get("workers", 1),
                   rank_correlation=plain.get("rank_correlation") or {},
                   default_vs_random=None if versus is None else DefaultVsRandom(**versus))


# -- a suite ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SuiteGrids:
    """The suite's grids: their names, and their configurations and compute summed."""

    suite: list[str]
    configs: int
    steps_total: int


@dataclass(frozen=True)
class SuiteMethod:
    """One method over the suite: its worst and mean scores, and each grid's (by grid name)."""

    name: str
    sampler: str
    pruner: str
    worst_hold_share: float
    mean_regret: float | None
    worst_reach_share: float
    mean_f_median: float | None
    hold_shares: dict[str, float]
    hold_cis: dict[str, list[float]]
    hold_tight_shares: dict[str, float]
    regret_medians: dict[str, float | None]
    regret_means: dict[str, float | None]
    spent_shares: dict[str, float]
    seeds: dict[str, int]
    reach_shares: dict[str, float]
    reach_cis: dict[str, list[float]]
    f_medians: dict[str, float | None]
    f_cis: dict[str, list[float | None]]
    general_shares: dict[str, float]
    general_cis: dict[str, list[float]]
    ever_shares: dict[str, float]
    default_on: list[str]  # the grids where it is search's default


@dataclass(frozen=True)
class PairedTests:
    """Two methods on one grid: McNemar's p on within 2 % and the sign test's p on regret."""

    hold: float
    regret: float


@dataclass(frozen=True)
class Alike:
    """A method no grid's paired test tells apart from the leader, with those tests by grid."""

    name: str
    tests: dict[str, PairedTests]


@dataclass(frozen=True)
class DefaultCheck:
    """The default on one grid against the goal (within 2 % in 80 % of seeds) and against the best there."""

    method: str
    hold_share: float
    hold_ci: list[float]
    regret: float | None
    regret_ci: list[float | None]
    meets_goal: bool
    best: str
    best_hold_share: float
    best_regret: float | None
    p_hold: float
    p_regret: float
    told_apart_from_best: bool


@dataclass(frozen=True)
class LeftOut:
    """One grid left out: the method the other grids choose, scored there, beside the best there."""

    held_out: str
    chosen: str
    chosen_hold_share: float
    chosen_hold_ci: list[float]
    chosen_regret: float | None
    best: str
    best_hold_share: float
    best_hold_ci: list[float]
    best_regret: float | None
    p_hold: float
    p_regret: float
    told_apart: bool


@dataclass(frozen=True)
class SuiteReport:
    """A suite's replay: `lpstudy replay --json` over several grids (SuiteResult.report())."""

    grid: SuiteGrids
    methods: list[SuiteMethod]  # ranked over the suite
    grids: list[tuple[str, GridReplay]]  # each grid's replay, by name
    leader: str
    alike: list[Alike]
    chosen: str
    default: dict[str, DefaultCheck]  # by grid
    leave_one_out: list[LeftOut]

    def to_plain(self) -> dict[str, Any]:
        """The JSON (each grid's replay with its name last), as it was written as plain dicts."""
        return json_safe({"grid": dataclasses.asdict(self.grid), "methods": [dataclasses.asdict(m) for m in self.methods],
                          "grids": [{**g.to_plain(), "name": n} for n, g in self.grids], "leader": self.leader,
                          "alike": [dataclasses.asdict(a) for a in self.alike], "chosen": self.chosen,
                          "default": {n: dataclasses.asdict(c) for n, c in self.default.items()},
                          "leave_one_out": [dataclasses.asdict(r) for r in self.leave_one_out]})
