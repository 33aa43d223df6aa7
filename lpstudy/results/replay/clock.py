"""The replay's simulated clock: how long a trial of a grid takes, from the grid's stored durations.

Each run of a grid table stores its wall time (grid_table.Run.wall_time_s) and the steps it ran; its
per-step seconds are the one over the other, and a trial of that configuration on that fold that
stops at step s (pruned) has run for s × that rate. A run stored without a wall time takes the
grid's pooled rate (the sum of the stored wall times over the sum of their steps); a grid with no
wall time at all counts one second a step, and says so (`measured`).

What the model leaves out, and what a real search pays beside it: the worker's own time per trial
(asking the sampler, opening the study, building the model, reading the data; docs/search-cost.md
measures it), and machine load: the grids were run two workers on a shared 2-core machine, so their
rates carry that machine's load at the time.

Plain Python: no torch, no Optuna.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lpstudy.results.replay.grid_table import GridTable, Run


@dataclass(frozen=True)
class TimeModel:
    """Seconds per optimisation step: each run's own (`rates[(config, fold)]`), else `pooled`; and the
    worker's own seconds a trial before its training (`per_trial_s`: asking, building the model,
    reading the data), which no grid stores: 0 unless the caller measured it (benchmarks/
    bench_search_real.py takes it from a real search's trials: their time from start to end less
    their training's)."""

    rates: dict[tuple[int, int], float]
    pooled: float
    measured: bool  # False: no run stored a wall time; one second a step
    per_trial_s: float = 0.0

    @classmethod
    def of(cls, table: GridTable, per_trial_s: float = 0.0) -> "TimeModel":
        timed = {key: run for key, run in table.runs.items() if _timed(run)}
        if not timed:
            return cls({}, 1.0, measured=False, per_trial_s=per_trial_s)
        pooled = sum(r.wall_time_s for r in timed.values()) / sum(r.steps_run for r in timed.values())
        return cls({key: r.wall_time_s / r.steps_run for key, r in timed.items()}, pooled, measured=True,
                   per_trial_s=per_trial_s)

    def rate(self, config: int, fold: int) -> float:
        return self.rates.get((config, fold), self.pooled)

    def seconds(self, config: int, fold: int, steps: float) -> float:
        """How long the run of `config` on `fold` takes to reach step `steps`."""
        return steps * self.rate(config, fold)


def _timed(run: Run) -> bool:
    return run.steps_run > 0 and math.isfinite(run.wall_time_s) and run.wall_time_s > 0
