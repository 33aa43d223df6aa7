"""What a trial of each preset costs, declared once: its size and its time, so that `--help`, the
README, `search` and `replicate` can say it before a user pays it. Torch-free.

Measured with benchmarks/bench_presets.py (CPU: one thread, on a shared 2-core machine; the paper's
and cpu presets from timed steps and forward passes at the preset's step and evaluation counts).
GPU figures are estimates (no GPU was at hand): nanoGPT's Shakespeare-char recipe, the `paper` preset
without QK normalisation, trains in about 3 minutes on one A100 (its README), and Lp-QKNorm adds
little to a step (arXiv:2602.05006; benchmarks/bench_step.py); the small presets are bound by kernel
launches on a GPU, a few milliseconds a step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lpstudy.values import format_duration

# What a command that runs local workers spends besides the trials, in CPU seconds, measured by
# benchmarks/bench_estimates.py (benchmarks/results/estimates.md): the command's own start (Python,
# Optuna, the study opened or created) and its summary at the end, and each worker process's start
# before its first step (Python, torch, lpstudy, the corpus, the study). The workers start side by side.
COMMAND_CPU_S = 4.1
WORKER_START_CPU_S = 2.7


# How long the probe of a command's CPU share runs (Machine.now): CPU seconds of a busy loop.
PROBE_CPU_S = 0.1


@dataclass(frozen=True)
class Machine:
    """How busy this machine is when a command starts: its cores and how many threads besides the
    command's own want a core now (`others`), which the command's workers join."""

    cores: int
    others: float

    @classmethod
    def now(cls) -> "Machine":
        """Measured twice, and the mean of the two readings kept: the load average of the last minute
        (less this command), which counts waiting work that takes no core and lags behind a load
        that changes, and a busy loop of PROBE_CPU_S CPU seconds, whose wall time gives one thread's
        share of a core now (a thread gets cores / (others + 1)), which misses the bursts of work
        beside it. In runs of benchmarks/bench_estimates.py on a shared 2-core machine (load 10–25),
        the probe alone left measured times 1.2–1.6× above its estimates and the busier of the two
        readings 0.5–0.9× below; their mean, 0.78–0.94× (benchmarks/results/estimates.md)."""
        import time

        cores = os.cpu_count() or 1
        wall, cpu = time.perf_counter(), time.process_time()
        while time.process_time() - cpu < PROBE_CPU_S:
            pass
        share = min(1.0, (time.process_time() - cpu) / max(1e-9, time.perf_counter() - wall))
        probed = max(0.0, cores / share - 1) if share < 0.95 else 0.0
        try:
            loaded = max(0.0, os.getloadavg()[0] - 1)
        except OSError:  # no load average on this platform
            loaded = 0.0
        return cls(cores=cores, others=(probed + loaded) / 2)

    def slowdown(self, threads: int) -> float:
        """How much longer CPU work of `threads` threads takes here than alone on idle cores: each
        thread gets cores / (others + threads) of a core once they outnumber the cores."""
        return max(1.0, (self.others + threads) / self.cores)

    def describe(self, threads: int) -> str:
        factor = self.slowdown(threads)
        if factor <= 1.05:
            return ""
        if self.others < 0.5:  # only this command's threads: the workers and its progress bar
            return f"; {threads} threads on {self.cores} cores: ×{factor:.1f} included"
        others = round(self.others)
        want = "other thread wants" if others == 1 else "other threads want"
        return f"; the machine is busy (about {others} {want} its {self.cores} cores): ×{factor:.1f} included"


@dataclass(frozen=True)
class PresetCost:
    n_params: int        # parameters of the model at 65 symbols (Tiny Shakespeare)
    cpu_trial_s: float   # one trial at the preset's max_steps, one CPU thread (measured)
    gpu_trial_s: float   # one trial on one A100-class GPU (an estimate)


PRESET_COSTS: dict[str, PresetCost] = {
    "paper": PresetCost(n_params=10_646_790, cpu_trial_s=303_197.0, gpu_trial_s=240.0),
    "cpu": PresetCost(n_params=795_908, cpu_trial_s=419.8, gpu_trial_s=20.0),
    "smoke": PresetCost(n_params=26_818, cpu_trial_s=3.5, gpu_trial_s=3.0),
}


def format_params(n: int) -> str:
    return f"{n / 1e6:.1f} M" if n >= 1e6 else f"{n / 1e3:.0f} k"


def trial_seconds(preset: str, max_steps: int | None = None, gpu: bool = False) -> float | None:
    """One trial of the preset, scaled to `max_steps` when that is changed; None for no estimate."""
    from lpstudy.training.config import PRESETS

    cost = PRESET_COSTS.get(preset)
    if cost is None:
        return None
    base = cost.gpu_trial_s if gpu else cost.cpu_trial_s
    default_steps = PRESETS[preset].max_steps
    return base * (max_steps or default_steps) / default_steps


def presets_help() -> str:
    """One line for --help: each preset's size and time per trial."""
    parts = [f"{name} ({format_params(c.n_params)} params, {format_duration(c.cpu_trial_s)}/trial on 1 CPU "
             f"thread, ~{format_duration(c.gpu_trial_s)} on a GPU, est.)" for name, c in PRESET_COSTS.items()]
    return "; ".join(parts)


def study_seconds(n_trials: int, preset: str, workers: int, gpu: bool, max_steps: int | None = None,
                  machine: Machine | None = None) -> float | None:
    """The wall time of `n_trials` trials on `workers` local workers, the command's and the workers'
    start included: on CPU workers (one thread each) slowed down by what else runs here (Machine)."""
    each = trial_seconds(preset, max_steps, gpu)
    if each is None:
        return None
    waves = -(-n_trials // max(1, workers))
    machine = machine or Machine.now()
    # while they run, the command polls the study for its progress bar: one more thread beside theirs
    busy = machine.slowdown(workers + 1)
    start = COMMAND_CPU_S * machine.slowdown(1) + WORKER_START_CPU_S * busy
    return start + waves * each * (1.0 if gpu else busy)


def study_estimate(n_trials: int, preset: str, workers: int, gpu: bool, max_steps: int | None = None,
                   pruned: bool = False, machine: Machine | None = None) -> str:
    """'8 trial(s) of preset smoke, ≈ 4 s each on 1 CPU thread; 2 worker(s): about 31 s, starting them
    included' (with `pruned`, where a pruner may stop trials: "(pruned trials end sooner)"; on a busy
    machine, how busy and the slowdown it adds)."""
    each = trial_seconds(preset, max_steps, gpu)
    where = "on a GPU (estimate)" if gpu else "on 1 CPU thread"
    if each is None:
        return f"{n_trials} trials of preset {preset}"
    machine = machine or Machine.now()
    total = study_seconds(n_trials, preset, workers, gpu, max_steps, machine)
    return (f"{n_trials} trial(s) of preset {preset}, ≈ {format_duration(each)} each {where}; "
            f"{workers} worker(s): about {format_duration(total)}, starting them included"
            + ("" if gpu else machine.describe(workers + 1))
            + (" (pruned trials end sooner)" if pruned else ""))


def serial_estimate(n_trials: int, preset: str, max_steps: int | None = None) -> str:
    """'70 trial(s) of preset paper: about 30 days on one CPU thread, ~4.7 h on one GPU (estimate)'."""
    cpu, gpu = trial_seconds(preset, max_steps, False), trial_seconds(preset, max_steps, True)
    if cpu is None or gpu is None:
        return f"{n_trials} trial(s) of preset {preset}"
    return (f"{n_trials} trial(s) of preset {preset}: about {format_duration(n_trials * cpu)} on one CPU thread, "
            f"~{format_duration(n_trials * gpu)} on one GPU (estimate); workers share them out")
