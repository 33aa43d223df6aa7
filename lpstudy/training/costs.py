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

from dataclasses import dataclass

from lpstudy.values import format_duration


# Starting the worker processes (Python, torch, the corpus, the study) before the first step, and the
# summary after the last: measured here, a search of 8 smoke trials on 2 workers took 39 s in all.
STARTUP_S = 15.0


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


def study_estimate(n_trials: int, preset: str, workers: int, gpu: bool, max_steps: int | None = None,
                   pruned: bool = False) -> str:
    """'8 trials of preset smoke, ≈ 12 s each on 1 CPU thread; 2 workers: about 48 s' (with
    `pruned`, where a pruner may stop trials: "(pruned trials end sooner)"; a CPU worker shares the
    machine's cores with the others)."""
    each = trial_seconds(preset, max_steps, gpu)
    where = "on a GPU (estimate)" if gpu else "on 1 CPU thread"
    if each is None:
        return f"{n_trials} trials of preset {preset}"
    waves = -(-n_trials // max(1, workers))
    return (f"{n_trials} trial(s) of preset {preset}, ≈ {format_duration(each)} each {where}; "
            f"{workers} worker(s): about {format_duration(waves * each + STARTUP_S)}"
            + (" (pruned trials end sooner)" if pruned else ""))


def serial_estimate(n_trials: int, preset: str, max_steps: int | None = None) -> str:
    """'70 trial(s) of preset paper: about 30 days on one CPU thread, ~4.7 h on one GPU (estimate)'."""
    cpu, gpu = trial_seconds(preset, max_steps, False), trial_seconds(preset, max_steps, True)
    if cpu is None or gpu is None:
        return f"{n_trials} trial(s) of preset {preset}"
    return (f"{n_trials} trial(s) of preset {preset}: about {format_duration(n_trials * cpu)} on one CPU thread, "
            f"~{format_duration(n_trials * gpu)} on one GPU (estimate); workers share them out")
