"""The peak memory (resident set) of a worker as its pod runs it, per preset: the floor below which a
container's memory limit has the kernel kill the worker at its first trial.

Each round creates a one-trial study of the preset on a throwaway SQLite file (a few steps, an
evaluation and a checkpoint among them, so that the optimiser's state, an evaluation's batches and a
checkpoint's write are all held at once), runs `lpstudy worker --no-progress --devices cpu` on it as a
child, and reads the child's peak RSS from the kernel (getrusage RUSAGE_CHILDREN: the largest
resident set of any child, in KiB). Beside it, the peak of `python -c "import torch"` alone.
tests/k8s_checks.py (MEMORY_NEEDED) takes its floors from the result file.

    python benchmarks/bench_worker_memory.py                 # smoke and cpu, 2 threads
    python benchmarks/bench_worker_memory.py --presets cpu --steps 20
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

STUDY = "preset: {preset}\npruner: none\nn_trials: 1\nspace:\n  max_steps: {steps}\n  eval_interval: {every}\n  eval_iters: 2\n"


def peak_of(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one child run to its end: a fresh process each, so that
    RUSAGE_CHILDREN's maximum is this child's."""
    script = ("import resource, subprocess, sys, time; t = time.monotonic(); "
              "r = subprocess.run(sys.argv[1:]); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.monotonic() - t, r.returncode)")
    out = subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True, check=True)
    kib, seconds, code = out.stdout.split()[-3:]
    if code != "0":
        raise SystemExit(f"{' '.join(argv)} exited {code}: {out.stderr[-2000:]}")
    return int(kib) / 1024, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", default="smoke,cpu")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS, as the pod sets it from its CPU request")
    add_result_argument(parser, "worker-memory")
    args = parser.parse_args()
    load_at_start = load_average()
    lpstudy = str(Path(sys.executable).parent / "lpstudy")
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    rows = [["program", "preset", "peak RSS (MiB)", "seconds"]]
    mib, seconds = peak_of([sys.executable, "-c", "import torch"], env)
    rows.append(["python -c 'import torch'", "–", f"{mib:.0f}", f"{seconds:.1f}"])
    for preset in args.presets.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            study = Path(tmp) / "study.yaml"
            study.write_text(STUDY.format(preset=preset, steps=args.steps, every=max(1, args.steps // 2)))
            run_env = {**env, "LPSTUDY_STORAGE": f"sqlite:///{tmp}/study.db", "LPSTUDY_ARTIFACTS": f"{tmp}/artifacts"}
            subprocess.run([lpstudy, "create", "--study", "memory", "--config", str(study)], env=run_env, check=True,
                           capture_output=True)
            mib, seconds = peak_of([lpstudy, "worker", "--study", "memory", "--config", str(study), "--no-progress",
                                    "--devices", "cpu"], run_env)
        rows.append([f"lpstudy worker ({args.steps} steps)", preset, f"{mib:.0f}", f"{seconds:.1f}"])
        print(rows[-1], file=sys.stderr)
    write_result(args.result, None, rows, notes=(
        f"Peak resident set of the child (getrusage), OMP_NUM_THREADS={args.threads}, SQLite, checkpoints on. "
        f"A worker's memory limit below its preset's row is a container the kernel kills at its first trial; "
        f"tests/k8s_checks.py, MEMORY_NEEDED, holds these figures."), load_at_start=load_at_start,
        title="A worker's peak memory, per preset")
    for row in rows[1:]:
        print(" | ".join(row))


if __name__ == "__main__":
    main()
