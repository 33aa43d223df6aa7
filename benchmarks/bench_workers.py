"""Trials per hour on one CPU machine: one worker using every core against one worker per core
(each with one thread), measured side by side in one run.

Each round runs the same grid study (the `smoke` preset by default, p × folds cells) twice, in
alternating order: `lpstudy worker --devices cpu` (one process, torch's default: every core) and
`lpstudy worker --devices cpu,cpu,...` (one process per core; lpstudy splits the cores, one thread
each). Wall time from the start of the command until every cell is done, process start-up
included; trials/hour = cells / wall time. The ratio (N workers over 1) is printed per round, so
that a machine whose load changes between rounds still compares like with like.

    python benchmarks/bench_workers.py                      # 12 cells of the smoke preset, 2 rounds
    python benchmarks/bench_workers.py --p 1,2,3,4 --folds 4 --steps 300 --rounds 3 --json

Then the share of a trial spent checkpointing (lpstudy.study.checkpoints through Optuna's
FileSystemArtifactStore), measured on one `cpu`-preset trial and scaled to the default spacing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402


def lpstudy(*args: str, env: dict) -> None:
    subprocess.run([sys.executable, "-m", "lpstudy", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_config(folder: Path, name: str, devices: str, args: argparse.Namespace, env: dict) -> float:
    """Seconds to run every cell of a fresh grid with `lpstudy worker --devices devices`."""
    url = f"sqlite:///{folder / (name + '.db')}"
    lpstudy("replicate", "--study", "b", "--storage", url, "--preset", args.preset, "--p", args.p,
            "--folds", str(args.folds), "--set", f"max_steps={args.steps}", env=env)
    start = time.perf_counter()
    lpstudy("worker", "--study", "b", "--storage", url, "--devices", devices, "--no-progress", env=env)
    return time.perf_counter() - start


def checkpoint_share(folder: Path, preset: str, steps: int, eval_interval: int, every: int) -> dict:
    """One trial of preset through the worker's checkpoint path (lpstudy.study.checkpoints: serialise,
    upload_artifact into a FileSystemArtifactStore, point the trial at it, remove the previous one)
    every `every` evaluations: the seconds spent saving over the trial's wall time, and per save."""
    import dataclasses
    import warnings

    import optuna
    import torch

    from lpstudy.study.checkpoints import TrialCheckpoints, artifact_store
    from lpstudy.training.config import resolve_config
    from lpstudy.training.data import load_corpus
    from lpstudy.training.trainer import train

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    study = optuna.create_study(storage=f"sqlite:///{folder / 'ck.db'}")
    trial = study.ask()
    saver = TrialCheckpoints(artifact_store(str(folder / "artifacts")), study, trial)
    spent = [0.0, 0]

    def save(checkpoint) -> None:
        t0 = time.perf_counter()
        saver.save(checkpoint)
        spent[0] += time.perf_counter() - t0
        spent[1] += 1

    cfg = dataclasses.replace(resolve_config(preset, {}), max_steps=steps, eval_interval=eval_interval,
                              threads=1, device="cpu")
    start = time.perf_counter()
    train(cfg, load_corpus(None), on_checkpoint=save, checkpoint_every=every)
    wall = time.perf_counter() - start
    return {"preset": preset, "steps": steps, "eval_interval": eval_interval, "every_evals": every,
            "saves": spent[1], "save_s": spent[0] / max(1, spent[1]), "trial_s": wall,
            "share": spent[0] / wall}


def main(argv: list[str] | None = None) -> None:
    from lpstudy.training.threads import usable_cores as cpu_count

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smoke")
    parser.add_argument("--steps", type=int, default=150, help="max_steps of each trial")
    parser.add_argument("--p", default="1,2,3,4")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=cpu_count(), help="N (default: the cores)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--checkpoint-preset", default="cpu",
                        help="preset of the checkpoint-share trial (after the rounds)")
    add_result_argument(parser, "workers")
    args = parser.parse_args(argv)
    load_at_start = load_average()
    cells = len(args.p.split(",")) * args.folds
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # lpstudy chooses the threads
    env.setdefault("PYTHONPATH", str(ROOT))
    configs = {"1 worker x all cores": "cpu", f"{args.workers} workers x 1 core": ",".join(["cpu"] * args.workers)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(configs.items()) if r % 2 == 0 else list(reversed(configs.items()))
            seconds = {label: one_config(Path(tmp), f"r{r}-{i}", devices, args, env)
                       for i, (label, devices) in enumerate(order)}
            per_hour = {label: cells / s * 3600 for label, s in seconds.items()}
            labels = list(configs)
            rows.append({"round": r, "seconds": seconds, "trials_per_hour": per_hour,
                         "ratio": per_hour[labels[1]] / per_hour[labels[0]]})
            if not args.json:
                print(f"round {r}: " + " · ".join(f"{k}: {v:.0f} trials/h ({seconds[k]:.1f} s)"
                                                  for k, v in per_hour.items())
                      + f" · ratio {rows[-1]['ratio']:.2f}", flush=True)
        # checkpointing: the cpu preset evaluates every 100 steps; a checkpoint every 5
        # evaluations (the default) is one per 500 steps. Measured over 300 steps, one save per
        # 50-step evaluation, then scaled to the default spacing.
        ck = checkpoint_share(Path(tmp), args.checkpoint_preset, steps=300, eval_interval=50, every=1)
    step_s = (ck["trial_s"] - ck["saves"] * ck["save_s"]) / ck["steps"]
    ck["share_at_default"] = ck["save_s"] / (ck["save_s"] + 500 * step_s)
    summary = {"cells": cells, "preset": args.preset, "steps": args.steps, "cores": cpu_count(),
               "rounds": rows, "median_ratio": statistics.median(r["ratio"] for r in rows),
               "checkpoint": ck}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{cells} cells of {args.preset} ({args.steps} steps) on {cpu_count()} cores: "
              f"{args.workers} workers x 1 core run {summary['median_ratio']:.2f}x the trials/hour of "
              "1 worker x all cores (median over rounds)")
        print(f"checkpoints ({ck['preset']} preset, one thread): {ck['save_s'] * 1000:.0f} ms per save, "
              f"{ck['share']:.2%} of a trial saving every 50 steps, {ck['share_at_default']:.3%} at the "
              "default spacing (every 5 evaluations of 100 steps)")
    labels = list(configs)
    write_result(args.result, None,
                 [["round", *(f"{label} (trials/h)" for label in labels), "ratio"],
                  *([r["round"], *(f"{r['trials_per_hour'][label]:.0f}" for label in labels), f"{r['ratio']:.2f}"]
                    for r in rows)],
                 title="CPU workers: one worker on every core against one worker per core",
                 load_at_start=load_at_start,
                 notes=f"{cells} cells of `{args.preset}` ({args.steps} steps) on {cpu_count()} cores, both layouts "
                       f"in each round, their order alternated. Checkpoints ({ck['preset']} preset, one thread): "
                       f"{ck['save_s'] * 1000:.0f} ms per save, {ck['share']:.2%} of a trial saving every 50 steps, "
                       f"{ck['share_at_default']:.3%} at the default spacing (every 5 evaluations of 100 steps).")


if __name__ == "__main__":
    main()
