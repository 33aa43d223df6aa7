"""A replay over a suite of grids: each method ranked on every grid, the ranks put together, and
the choice of a default checked on grids it was not chosen on.

One grid is one benchmark, and a default chosen on one benchmark fits it. HPOBench, YAHPO Gym and
LCBench rank methods over suites of benchmarks: here each method's Borda rank on each grid
(lpstudy.results.replay), averaged over the grids, and its worst share of seeds within ε on any
grid. The choice rule: among the methods with a spread phase (the first run of a study must show
p's effect from completed trials spread over p: lpstudy.study.spread), the method whose worst
reach share is highest, then the lowest mean Borda rank. Leave-one-grid-out: for each grid, the method that rule picks from the other grids alone,
scored on the grid left out, beside the best method there; a rule that only fits its benchmarks
loses there.

It reads each grid's replay as `ReplayResult.to_json()` gives it, so a suite can be put together
from grids replayed one at a time (the replay is deterministic per grid, method set and seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SuiteResult:
    names: list[str]  # one per grid
    grids: list[dict[str, Any]]  # each grid's ReplayResult.to_json()

    def __post_init__(self) -> None:
        self._rows = [{m["name"]: m for m in g["methods"]} for g in self.grids]

    def methods(self) -> list[str]:
        """The methods replayed on every grid, in the first grid's order."""
        return [m for m in self._rows[0] if all(m in rows for rows in self._rows)]

    def mean_borda(self, method: str, grids: list[int] | None = None) -> float:
        chosen = self._grids(grids)
        return sum(self._rows[i][method]["borda"] for i in chosen) / len(chosen)

    def worst_reach(self, method: str, grids: list[int] | None = None) -> float:
        return min(self._rows[i][method]["reach_share"] for i in self._grids(grids))

    def _grids(self, grids: list[int] | None) -> list[int]:
        return list(range(len(self.grids))) if grids is None else grids

    def _key(self, method: str, grids: list[int] | None = None) -> tuple:
        return -self.worst_reach(method, grids), self.mean_borda(method, grids), method

    def candidates(self) -> list[str]:
        """The methods a default may be: those with a spread phase (`@N`), or all if none has one."""
        spread = [m for m in self.methods() if "@" in m]
        return spread or self.methods()

    def choose(self, grids: list[int] | None = None) -> str:
        """The choice rule on these grids: highest worst reach share, then lowest mean Borda rank."""
        return min(self.candidates(), key=lambda m: self._key(m, grids))

    def leave_one_out(self) -> list[dict[str, Any]]:
        rows = []
        for held in range(len(self.grids)):
            chosen = self.choose([i for i in range(len(self.grids)) if i != held])
            there = self._rows[held][chosen]
            best = min(self._rows[held].values(), key=lambda m: m["borda"])
            rows.append({"held_out": self.names[held], "chosen": chosen,
                         "chosen_reach_share": there["reach_share"], "chosen_f_median": there["f_median"],
                         "chosen_borda": there["borda"], "best": best["name"], "best_reach_share": best["reach_share"],
                         "best_f_median": best["f_median"]})
        return rows

    def to_json(self) -> dict[str, Any]:
        methods = []
        for name in sorted(self.methods(), key=self._key):
            first = self._rows[0][name]
            methods.append({
                "name": name, "sampler": first["sampler"], "pruner": first["pruner"],
                "mean_borda": self.mean_borda(name), "worst_reach_share": self.worst_reach(name),
                "reach_shares": {n: rows[name]["reach_share"] for n, rows in zip(self.names, self._rows)},
                "f_medians": {n: rows[name]["f_median"] for n, rows in zip(self.names, self._rows)},
                "default_on": [n for n, rows in zip(self.names, self._rows) if rows[name]["default"]]})
        return {
            "grid": {"suite": self.names, "configs": sum(g["grid"]["configs"] for g in self.grids),
                     "steps_total": sum(g["grid"]["steps_total"] for g in self.grids)},
            "methods": methods,
            "grids": [{**g, "name": n} for n, g in zip(self.names, self.grids)],
            "chosen": self.choose(),
            "default": {n: next(({"method": m["name"], "reach_share": m["reach_share"], "f_median": m["f_median"],
                                  "borda": m["borda"]} for m in g["methods"] if m["default"]), None)
                        for n, g in zip(self.names, self.grids)},
            "leave_one_out": self.leave_one_out(),
        }
