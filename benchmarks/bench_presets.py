"""What one trial of each preset costs: its size (parameters) and its time per trial, measured here.

A trial is `max_steps` optimisation steps plus `max_steps / eval_interval + 1` evaluations of
`2 × eval_iters` forward passes (training and validation split), as in lpstudy.training.trainer.
Each preset's step and forward pass are timed (median over rounds, the presets interleaved so that
drifts of a shared machine hit them alike), and the trial time is their sum at the preset's counts.
The figures in lpstudy/training/costs.py and the README come from this script:

    OMP_NUM_THREADS=1 python benchmarks/bench_presets.py --threads 1
    python benchmarks/bench_presets.py --device cuda --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402
from lpstudy.model.gpt import GPT
from lpstudy.training.config import PRESETS, resolve_config
from lpstudy.training.trainer import adamw, autocast_for, keep_freed_memory, pick_device


def timers(preset: str, device: torch.device):
    cfg = resolve_config(preset, {"device": str(device)})
    torch.manual_seed(0)
    model = GPT(cfg.model_config(vocab_size=65)).to(device)
    optimizer = adamw(model, cfg, device.type)
    autocast = autocast_for(cfg, device)
    x = torch.randint(0, 65, (cfg.batch_size, cfg.block_size), device=device)
    y = torch.randint(0, 65, (cfg.batch_size, cfg.block_size), device=device)
    params = list(model.parameters())

    def step() -> None:
        with autocast:
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    @torch.no_grad()
    def forward() -> None:
        with autocast:
            model(x, y)

    return cfg, model.num_params(), step, forward


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--json", action="store_true")
    add_result_argument(parser, "presets")
    args = parser.parse_args()
    load_at_start = load_average()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    if device.type == "cpu":
        keep_freed_memory()
    built = {name: timers(name, device) for name in args.presets.split(",")}
    times: dict[str, dict[str, list[float]]] = {name: {"step": [], "forward": []} for name in built}
    for name, (_, _, step, forward) in built.items():  # warm-up
        step(); forward()
    for _ in range(args.rounds):
        for name, (_, _, step, forward) in built.items():
            for kind, fn in (("step", step), ("forward", forward)):
                sync(device)
                t0 = time.perf_counter()
                fn()
                sync(device)
                times[name][kind].append(time.perf_counter() - t0)
    rows = []
    for name, (cfg, n_params, _, _) in built.items():
        step_s = statistics.median(times[name]["step"])
        fwd_s = statistics.median(times[name]["forward"])
        evals = cfg.max_steps // cfg.eval_interval + 1
        trial_s = cfg.max_steps * step_s + evals * 2 * cfg.eval_iters * fwd_s
        rows.append({"preset": name, "n_params": n_params, "step_ms": 1000 * step_s, "forward_ms": 1000 * fwd_s,
                     "trial_s": trial_s, "ratio_to_smoke": None})
    smoke = next((r["trial_s"] for r in rows if r["preset"] == "smoke"), None)
    for r in rows:
        r["ratio_to_smoke"] = r["trial_s"] / smoke if smoke else None
    write_result(args.result, None,
                 [["preset", "parameters", "step (ms)", "forward (ms)", "one trial (s)", "× smoke"],
                  *([r["preset"], f"{r['n_params']:,}", f"{r['step_ms']:.2f}", f"{r['forward_ms']:.2f}",
                     f"{r['trial_s']:.1f}", f"{r['ratio_to_smoke']:.0f}" if r["ratio_to_smoke"] else "–"]
                    for r in rows)],
                 title="What one trial of each preset costs", load_at_start=load_at_start,
                 notes=f"device {device}, {torch.get_num_threads()} threads, median over {args.rounds} rounds, the "
                       "presets interleaved; a trial is max_steps steps plus its evaluations' forward passes.")
    if args.json:
        json.dump({"device": str(device), "threads": torch.get_num_threads(), "rounds": args.rounds,
                   "results": rows}, sys.stdout, indent=2)
        print()
        return
    print(f"device={device} threads={torch.get_num_threads()} rounds={args.rounds}")
    for r in rows:
        print(f"  {r['preset']:>6}  {r['n_params']:>11,} params  step {r['step_ms']:9.2f} ms  "
              f"forward {r['forward_ms']:8.2f} ms  trial {r['trial_s']:10.1f} s  "
              f"({r['ratio_to_smoke']:.0f}× smoke)")


if __name__ == "__main__":
    main()
