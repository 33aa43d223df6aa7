"""A replay over a suite of grids: each method ranked on every grid, the ranks put together, and
the choice of a default checked on grids it was not chosen on.

One grid is one benchmark, and a default chosen on one benchmark fits it. HPOBench, YAHPO Gym and
LCBench rank methods over suites of benchmarks: each method's Borda rank on each grid
(lpstudy.results.replay), averaged over the grids, and its worst share of seeds within ε on any
grid. The choice rule: the method whose worst reach share is highest, then the lowest mean Borda
rank. Leave-one-grid-out: for each grid, the method that rule picks from the other grids alone,
scored on the grid left out, beside the best method there; a rule that only fits its benchmarks
loses there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lpstudy.results.replay import ReplayResult
from lpstudy.results.replay_methods import Method


@dataclass
class SuiteResult:
    names: list[str]  # one per grid
    results: list[ReplayResult]

    def methods(self) -> list[Method]:
        """The methods replayed on every grid, in the first grid's order."""
        common = [s.method for s in self.results[0].scores]
        return [m for m in common if all(r.score(m) is not None for r in self.results)]

    def mean_borda(self, method: Method, grids: list[int] | None = None) -> float:
        return float(np.mean([self.results[i].score(method).borda for i in self._grids(grids)]))

    def worst_reach(self, method: Method, grids: list[int] | None = None) -> float:
        return min(self.results[i].score(method).reach_share for i in self._grids(grids))

    def _grids(self, grids: list[int] | None) -> list[int]:
        return list(range(len(self.results))) if grids is None else grids

    def choose(self, grids: list[int] | None = None) -> Method:
        """The choice rule on these grids: highest worst reach share, then lowest mean Borda rank."""
        return min(self.methods(), key=lambda m: (-self.worst_reach(m, grids), self.mean_borda(m, grids), m.name))

    def leave_one_out(self) -> list[dict[str, Any]]:
        rows = []
        for held in range(len(self.results)):
            others = [i for i in range(len(self.results)) if i != held]
            chosen = self.choose(others)
            result = self.results[held]
            there = result.score(chosen)
            best = min(result.scores, key=lambda s: s.borda)
            rows.append({"held_out": self.names[held], "chosen": chosen.name,
                         "chosen_reach_share": there.reach_share, "chosen_f_median": _finite(there.f_median),
                         "chosen_borda": there.borda, "best": best.method.name, "best_reach_share": best.reach_share,
                         "best_f_median": _finite(best.f_median)})
        return rows

    def to_json(self) -> dict[str, Any]:
        grids = []
        for name, result in zip(self.names, self.results):
            plain = result.to_json()
            plain["name"] = name
            grids.append(plain)
        defaults = [r.default for r in self.results]
        methods = []
        for m in sorted(self.methods(), key=lambda m: (-self.worst_reach(m), self.mean_borda(m), m.name)):
            methods.append({
                "name": m.name, "sampler": m.sampler, "pruner": m.pruner, "spread": m.spread,
                "mean_borda": self.mean_borda(m), "worst_reach_share": self.worst_reach(m),
                "reach_shares": {n: r.score(m).reach_share for n, r in zip(self.names, self.results)},
                "f_medians": {n: _finite(r.score(m).f_median) for n, r in zip(self.names, self.results)},
                "default_on": [n for n, d in zip(self.names, defaults) if d == m]})
        chosen = self.choose()
        return {
            "grid": {"suite": self.names, "configs": sum(r.table.shape()["configs"] for r in self.results),
                     "steps_total": sum(r.table.steps_total for r in self.results)},
            "methods": methods,
            "grids": grids,
            "chosen": chosen.name,
            "default": {n: _default_row(r) for n, r in zip(self.names, self.results)},
            "leave_one_out": self.leave_one_out(),
        }


def _default_row(result: ReplayResult) -> dict[str, Any] | None:
    score = result.score(result.default) if result.default is not None else None
    if score is None:
        return None
    return {"method": score.method.name, "reach_share": score.reach_share, "f_median": _finite(score.f_median),
            "borda": score.borda}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
