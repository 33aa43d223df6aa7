"""Training-step time of Lp-QKNorm attention against the baseline attention, as ratios.

Every variant is built from the same preset in the same process, and the variants are timed in
interleaved rounds (A B C D E, A B C D E, ...) so that drifts of the machine hit them alike. Each
round times `--steps` full optimisation steps (forward, backward, clipping, AdamW) per variant; the
median over rounds is reported.

    python benchmarks/bench_step.py --preset cpu
    python benchmarks/bench_step.py --preset paper --device cuda --json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import torch

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402
from lpstudy.training.config import resolve_config
from lpstudy.model.gpt import GPT
from lpstudy.training.trainer import adamw, autocast_for, keep_freed_memory, pick_device

VARIANTS: list[tuple[str, dict[str, object]]] = [("baseline", {"attention": "baseline"}),
            ("p=2", {"p": 2.0}), ("p=3.5", {"p": 3.5}), ("p=2.7", {"p": 2.7}), ("p=inf", {"p": math.inf})]


def make_stepper(preset: str, overrides: dict, device: torch.device, compile_: bool):
    cfg = resolve_config(preset, {**overrides, "device": str(device), "compile": compile_})
    torch.manual_seed(0)
    model = GPT(cfg.model_config(vocab_size=65)).to(device)
    optimizer = adamw(model, cfg, device.type)
    step_model = torch.compile(model) if compile_ else model
    autocast = autocast_for(cfg, device)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 65, (cfg.batch_size, cfg.block_size), generator=g).to(device)
    y = torch.randint(0, 65, (cfg.batch_size, cfg.block_size), generator=g).to(device)
    params = list(model.parameters())

    def step() -> None:
        with autocast:
            _, loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10, help="steps timed per variant per round")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--compile", action="store_true", help="torch.compile every variant")
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's malloc thresholds as they are (training raises them on CPU)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time (steadier on a shared CPU machine)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_result_argument(parser, "step")
    args = parser.parse_args()
    load_at_start = load_average()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    if device.type == "cpu" and not args.default_malloc:
        keep_freed_memory()  # as training does
    clock = time.process_time if args.clock == "cpu" and device.type == "cpu" else time.perf_counter

    steppers = {name: make_stepper(args.preset, ov, device, args.compile) for name, ov in VARIANTS}
    for step in steppers.values():
        for _ in range(args.warmup):
            step()
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(args.rounds):
        for name, step in steppers.items():
            sync(device)
            t0 = clock()
            for _ in range(args.steps):
                step()
            sync(device)
            times[name].append((clock() - t0) / args.steps)

    base = statistics.median(times["baseline"])
    l2 = statistics.median(times["p=2"])
    rows = [{"variant": name, "step_ms": 1000 * statistics.median(t), "ratio": statistics.median(t) / base,
             "ratio_to_p2": statistics.median(t) / l2} for name, t in times.items()]
    write_result(args.result, None,
                 [["variant", "step (ms)", "vs baseline", "vs p=2 (QKNorm)"],
                  *([row["variant"], f"{row['step_ms']:.2f}", f"{row['ratio']:.3f}×", f"{row['ratio_to_p2']:.3f}×"]
                    for row in rows)],
                 title="Lp attention's step time against the baseline", load_at_start=load_at_start,
                 notes=f"preset {args.preset}, device {device}, {torch.get_num_threads()} threads, compile "
                       f"{args.compile}, clock {args.clock}; median step time over {args.rounds} rounds × "
                       f"{args.steps} steps, the variants interleaved round by round.")
    if args.json:
        json.dump({"preset": args.preset, "device": str(device), "threads": torch.get_num_threads(),
                   "compile": args.compile, "clock": args.clock, "rounds": args.rounds, "steps_per_round": args.steps,
                   "results": rows}, sys.stdout, indent=2)
        print()
        return
    print(f"preset={args.preset} device={device} threads={torch.get_num_threads()} compile={args.compile} "
          f"clock={args.clock} rounds={args.rounds}×{args.steps} steps, median step time")
    print(f"  {'variant':>9}  {'step':>10}  {'vs baseline':>11}  {'vs p=2 (QKNorm)':>15}")
    for row in rows:
        print(f"  {row['variant']:>9}  {row['step_ms']:7.2f} ms  {row['ratio']:10.3f}×  {row['ratio_to_p2']:14.3f}×")


if __name__ == "__main__":
    main()
