"""What the README's commands say they will take, against what they take, in one run.

In a fresh folder (its own ./storage/, the repository's examples/), one after the other and as the
README writes them: `lpstudy search --preset smoke --workers 2`, the tour's `lpstudy search --study
lp-smoke --config examples/search-smoke.yaml --workers 2`, the same continued with `--n-trials 1`,
and `lpstudy replicate --study matched --preset smoke --p 1,2,3,4 --folds 3 --gain-init matched
--workers 2`. For each: the estimate it printed ("about ..."), its wall time and the ratio, the load
average when it started. Then what the estimate's constants stand for (lpstudy.training.costs):
the CPU seconds of a worker's start (Python, torch, lpstudy, the corpus; median of 3 fresh
processes) and of the command's own work around its workers (`lpstudy create` and `lpstudy status`
of a smoke study).

    python benchmarks/bench_estimates.py [--result estimates]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

COMMANDS = [
    "lpstudy search --preset smoke --workers 2",
    "lpstudy search --study lp-smoke --config examples/search-smoke.yaml --workers 2",
    "lpstudy search --study lp-smoke --n-trials 1",
    "lpstudy replicate --study matched --preset smoke --p 1,2,3,4 --folds 3 --gain-init matched --workers 2",
]
WORKER_START = ("import torch, lpstudy.study.worker, lpstudy.training.trainer\n"
                "from lpstudy.training.data import load_corpus\nload_corpus(None)\n")


def seconds_of(text: str) -> float:
    """'1 min 10 s' → 70; '34 s' → 34; '2 h 5 min' → 7500 (lpstudy.values.format_duration's forms)."""
    units = {"s": 1, "min": 60, "h": 3600, "days": 86400}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+) (s|min|h|days)\b", text))


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of it and its children, its output)."""
    cpu, start = cpu_children(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])} failed: {(done.stdout + done.stderr)[-800:]}")
    return wall, cpu_children() - cpu, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_result_argument(parser, "estimates")
    args = parser.parse_args()
    load_at_start = load_average()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LPSTUDY_STORAGE": ""}
    env.setdefault("LPSTUDY_DATA", str(ROOT.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"))
    rows = [["command", "estimate printed", "estimate (s)", "measured (s)", "measured / estimate", "load at start"]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(ROOT / "examples", folder / "examples")
        for command in COMMANDS:
            load = f"{os.getloadavg()[0]:.1f}"
            wall, _, out = run([sys.executable, "-m", "lpstudy", *command.split()[1:]], folder, env)
            said = re.search(r"about ([^,]+), starting them included", out)
            estimate = seconds_of(said.group(1)) if said else float("nan")
            rows.append([f"`{command}`", said.group(1) if said else "(none)", f"{estimate:.0f}", f"{wall:.0f}",
                         f"{wall / estimate:.2f}", load])
            print(rows[-1], file=sys.stderr)
        starts = [run([sys.executable, "-c", WORKER_START], folder, env)[1] for _ in range(3)]
        own = [run([sys.executable, "-m", "lpstudy", *argv], folder, env)[1] for argv in (
            ["create", "--study", "bench", "--preset", "smoke"], ["status", "--study", "bench"])]
    more = [("CPU seconds of what an estimate adds to the trials (lpstudy.training.costs: WORKER_START_CPU_S, "
             "COMMAND_CPU_S), each in fresh processes on this machine.",
             [["part", "CPU seconds"], ["a worker's start (median of 3)", f"{statistics.median(starts):.1f}"],
              ["the command's own: create + status", f"{sum(own):.1f}"]])]
    notes = ("Each command as the README writes it, run one after the other in one fresh folder, under `nice` beside "
             "the other work of a shared machine (as users run it); the estimate is the one the command printed before "
             "its workers started, which counts the CPU share a thread got at that moment (lpstudy.training.costs.Machine).")
    write_result(args.result, None, rows, notes, title="Estimates against measured times", more_tables=more,
                 load_at_start=load_at_start)


if __name__ == "__main__":
    main()
