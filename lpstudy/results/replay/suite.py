"""A replay over a suite of grids: each method scored on every grid, the choice of a default made
over the suite, and that choice checked on grids it was not made on.

One grid is one benchmark, and a default chosen on one benchmark fits it; HPOBench, YAHPO Gym and
LCBench compare methods over suites of benchmarks. The choice rule, over the methods with a spread
phase (the first run of a study must show p's effect from completed trials spread over p:
lpstudy.study.spread), scored on what the user gets (lpstudy.results.replay.scores, since issue 45):

1. the leader: the highest worst hold over the grids (hold: the share of seeds whose returned
   configuration's mean loss over all folds lies within 2 % of the best's, at the end of the
   budget), then the lowest mean regret in nats (over seeds, then over the grids);
2. the methods that cannot be told apart from the leader: on every grid, neither McNemar's exact
   test on hold nor the sign test on regret, both paired over seeds, rejects at 5 % (each grid and
   each method tested alone: with many methods some differences are found by chance, which only
   makes this set smaller);
3. among those, the simplest (SIMPLICITY: no pruner before the median pruner before successive
   halving before Hyperband; random search before a model-based sampler; how many leaders a method
   races is a setting of it, not a simpler method), the leader on a tie.

Leave-one-grid-out: for each grid, the method the rule chooses from the other grids alone, scored
on the grid left out, beside the best method there by the same ranking (hold, then mean regret).

It reads each grid's replay typed (lpstudy.results.replay.result_types.GridReplay: ReplayResult.report(),
per-seed scores included, or one written before, read back with GridReplay.from_plain), so a suite
can be put together from grids replayed one at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lpstudy.results.replay.methods import FOLD_PRUNER
from lpstudy.results.replay.result_types import (Alike, DefaultCheck, GridReplay, LeftOut, MethodRow,
                                                 PairedTests, SuiteGrids, SuiteMethod, SuiteReport)
from lpstudy.results.replay.scores import HOLD_GOAL, mcnemar_p, rank_key, sign_p
from lpstudy.design.options import PRUNERS

ALPHA = 0.05
# Simpler first: pruners (in the catalogue's order, simplest first; the fold pruner last), then
# samplers (a rank each; equal ranks are equally simple).
PRUNER_SIMPLICITY = {name: rank for rank, name in enumerate((*PRUNERS, FOLD_PRUNER))}
SAMPLER_SIMPLICITY = {"random": 0, "tpe": 1, "tpe-optuna": 1, "cmaes": 1, "gp": 2}


def simplicity(row: MethodRow) -> tuple[int, int]:
    """How simple a method is: its pruner, then its sampler. How many leaders it races is a setting
    of the same method, not a simpler one: among races alike, the leader's stands."""
    return PRUNER_SIMPLICITY.get(row.pruner, 9), SAMPLER_SIMPLICITY.get(row.sampler, 9)


def paired_p(a: MethodRow, b: MethodRow) -> PairedTests:
    """Two methods' rows on one grid: McNemar's p on hold and the sign test's p on regret, over the
    seeds both ran."""
    n = min(len(a.per_seed.hold), len(b.per_seed.hold))
    regret = [[math.inf if x is None else x for x in row.per_seed.regret[:n]] for row in (a, b)]
    return PairedTests(hold=mcnemar_p([bool(x) for x in a.per_seed.hold[:n]], [bool(x) for x in b.per_seed.hold[:n]]),
                       regret=sign_p(*regret))


def told_apart(p: PairedTests) -> bool:
    return p.hold < ALPHA or p.regret < ALPHA


@dataclass
class SuiteResult:
    names: list[str]  # one per grid
    grids: list[GridReplay]  # each grid's replay (ReplayResult.report(), or a written one: GridReplay.from_plain)

    def __post_init__(self) -> None:
        self._rows = [{m.name: m for m in g.methods} for g in self.grids]

    def methods(self) -> list[str]:
        """The methods replayed on every grid, in the first grid's order."""
        return [m for m in self._rows[0] if all(m in rows for rows in self._rows)]

    def _grids(self, grids: list[int] | None) -> list[int]:
        return list(range(len(self.grids))) if grids is None else grids

    def worst_hold(self, method: str, grids: list[int] | None = None) -> float:
        return min(self._rows[i][method].hold_share for i in self._grids(grids))

    def worst_reach(self, method: str, grids: list[int] | None = None) -> float:
        return min(self._rows[i][method].reach_share for i in self._grids(grids))

    def mean_regret(self, method: str, grids: list[int] | None = None) -> float:
        """The mean over the grids of the method's mean regret (nats)."""
        rs = [self._rows[i][method].regret_nats_mean for i in self._grids(grids)]
        return math.inf if None in rs else sum(r for r in rs if r is not None) / len(rs)

    def mean_f(self, method: str, grids: list[int] | None = None) -> float:
        fs = [self._rows[i][method].f_median for i in self._grids(grids)]
        return math.inf if None in fs else sum(f for f in fs if f is not None) / len(fs)

    def key(self, method: str, grids: list[int] | None = None) -> tuple:
        return -self.worst_hold(method, grids), self.mean_regret(method, grids), method

    def candidates(self) -> list[str]:
        """The methods a default may be: those with a spread phase (`@N`), or all if none has one."""
        spread = [m for m in self.methods() if "@" in m]
        return spread or self.methods()

    def leader(self, grids: list[int] | None = None) -> str:
        return min(self.candidates(), key=lambda m: self.key(m, grids))

    def tests(self, a: str, b: str, grids: list[int] | None = None) -> dict[str, PairedTests]:
        """The paired tests of two methods on each grid (by name)."""
        return {self.names[i]: paired_p(self._rows[i][a], self._rows[i][b]) for i in self._grids(grids)}

    def alike(self, method: str, grids: list[int] | None = None) -> list[str]:
        """The candidates that no grid's paired test tells apart from `method` (itself first)."""
        return [method] + [m for m in self.candidates() if m != method
                           and not any(told_apart(p) for p in self.tests(method, m, grids).values())]

    def choose(self, grids: list[int] | None = None) -> str:
        """The choice rule (the module's docstring): the simplest method not told apart from the leader."""
        alike = self.alike(self.leader(grids), grids)
        return min(alike, key=lambda m: (simplicity(self._rows[0][m]), alike.index(m)))

    def best_on(self, grid: int, among: list[str] | None = None) -> MethodRow:
        rows = self._rows[grid]
        return min((rows[m] for m in (among or list(rows))), key=rank_key)

    def leave_one_out(self) -> list[LeftOut]:
        rows = []
        for held in range(len(self.grids)):
            others = [i for i in range(len(self.grids)) if i != held]
            chosen = self.choose(others)
            there = self._rows[held][chosen]
            best = self.best_on(held, self.candidates())
            p = paired_p(there, best)
            rows.append(LeftOut(held_out=self.names[held], chosen=chosen,
                                chosen_hold_share=there.hold_share, chosen_hold_ci=there.hold_ci,
                                chosen_regret=there.regret_nats_mean,
                                best=best.name, best_hold_share=best.hold_share, best_hold_ci=best.hold_ci,
                                best_regret=best.regret_nats_mean, p_hold=p.hold, p_regret=p.regret,
                                told_apart=best.name != chosen and told_apart(p)))
        return rows

    def default_check(self, default: str) -> dict[str, DefaultCheck]:
        """On each grid, the default against the goal (hold ≥ 80 %: its returned configuration within
        2 % of the best all-fold loss in 80 % of seeds) and against the best method measured there
        (paired tests)."""
        out = {}
        for i, name in enumerate(self.names):
            row = self._rows[i].get(default)
            if row is None:
                continue
            best = self.best_on(i)
            p = paired_p(row, best)
            out[name] = DefaultCheck(method=default, hold_share=row.hold_share, hold_ci=row.hold_ci,
                                     regret=row.regret_nats_median, regret_ci=row.regret_nats_ci,
                                     meets_goal=row.hold_share >= HOLD_GOAL, best=best.name,
                                     best_hold_share=best.hold_share, best_regret=best.regret_nats_median,
                                     p_hold=p.hold, p_regret=p.regret,
                                     told_apart_from_best=best.name != default and told_apart(p))
        return out

    def report(self) -> SuiteReport:
        """What `lpstudy replay` prints and `--json` writes of a suite."""
        methods = []
        for name in sorted(self.methods(), key=self.key):
            first = self._rows[0][name]
            by_grid = list(zip(self.names, self._rows))
            methods.append(SuiteMethod(
                name=name, sampler=first.sampler, pruner=first.pruner,
                worst_hold_share=self.worst_hold(name), mean_regret=_finite(self.mean_regret(name)),
                worst_reach_share=self.worst_reach(name), mean_f_median=_finite(self.mean_f(name)),
                hold_shares={n: rows[name].hold_share for n, rows in by_grid},
                hold_cis={n: rows[name].hold_ci for n, rows in by_grid},
                hold_tight_shares={n: rows[name].hold_tight_share for n, rows in by_grid},
                regret_medians={n: rows[name].regret_nats_median for n, rows in by_grid},
                regret_means={n: rows[name].regret_nats_mean for n, rows in by_grid},
                spent_shares={n: rows[name].spent_share for n, rows in by_grid},
                seeds={n: rows[name].seeds for n, rows in by_grid},
                reach_shares={n: rows[name].reach_share for n, rows in by_grid},
                reach_cis={n: rows[name].reach_ci for n, rows in by_grid},
                f_medians={n: rows[name].f_median for n, rows in by_grid},
                f_cis={n: rows[name].f_ci for n, rows in by_grid},
                general_shares={n: rows[name].general_share for n, rows in by_grid},
                general_cis={n: rows[name].general_ci for n, rows in by_grid},
                ever_shares={n: rows[name].ever_share for n, rows in by_grid},
                default_on=[n for n, rows in by_grid if rows[name].default]))
        leader = self.leader()
        default = next((m.name for m in self.grids[0].methods if m.default), None)
        return SuiteReport(
            grid=SuiteGrids(suite=self.names, configs=sum(g.grid.configs for g in self.grids),
                            steps_total=sum(g.grid.steps_total for g in self.grids)),
            methods=methods, grids=list(zip(self.names, self.grids)), leader=leader,
            alike=[Alike(name=m, tests=self.tests(leader, m)) for m in self.alike(leader)],
            chosen=self.choose(), default=self.default_check(default) if default else {},
            leave_one_out=self.leave_one_out())

    def to_json(self) -> dict[str, Any]:
        """The `--json` object (report().to_plain())."""
        return self.report().to_plain()


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
