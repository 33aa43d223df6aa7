"""How long the read side takes to start, against importing torch, in one run.

Each round starts, in fresh interpreters and in turn: `python -c "import torch"` (the reference),
`lpstudy --help`, `lpstudy status` on a small synthetic study, and the dashboard's first page
(Streamlit's AppTest drawing app/dashboard.py's Home page in a fresh process: the imports and the
first draw a new server does). The report is each command's median wall time and its ratio to the
torch import, so that the figures compare on any machine.

    python benchmarks/bench_startup.py [--rounds 5] [--json]
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

FIRST_PAGE = """
import os, sys
sys.path.insert(0, {app!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({entry!r}, default_timeout=120).run()
assert not at.exception, at.exception
"""


def commands(storage: str) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "import torch": [py, "-c", "import torch"],
        "lpstudy --help": [py, "-m", "lpstudy", "--help"],
        "lpstudy status": [py, "-m", "lpstudy", "status", "--study", "bench", "--storage", storage],
        "dashboard first page": [py, "-c", FIRST_PAGE.format(app=str(ROOT / "app"),
                                                             entry=str(ROOT / "app" / "dashboard.py"))],
    }


def timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_result_argument(parser, "startup")
    args = parser.parse_args()
    load_at_start = load_average()

    from lpstudy.study.synthetic import write_synthetic_study

    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{Path(tmp) / 'bench.db'}"
        write_synthetic_study(storage, "bench", n_trials=60, n_evals=20)
        env = {**os.environ, "LPSTUDY_STORAGE": storage}
        cmds = commands(storage)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for name, cmd in cmds.items():  # warm the file cache once
            timed(cmd, env)
        for _ in range(args.rounds):  # interleaved, so that a busy moment hits every command alike
            for name, cmd in cmds.items():
                times[name].append(timed(cmd, env))
    reference = statistics.median(times["import torch"])
    result = {name: {"median_s": round(statistics.median(t), 3), "min_s": round(min(t), 3),
                     "max_s": round(max(t), 3), "ratio_to_import_torch": round(statistics.median(t) / reference, 2)}
              for name, t in times.items()}
    write_result(args.result, None,
                 [["command", "median (s)", "range (s)", "÷ import torch"],
                  *([name, f"{row['median_s']:.2f}", f"{row['min_s']:.2f}–{row['max_s']:.2f}",
                     f"{row['ratio_to_import_torch']:.2f}"] for name, row in result.items())],
                 title="How long the read side takes to start, against import torch", load_at_start=load_at_start,
                 notes=f"{args.rounds} rounds, the commands interleaved; a synthetic study of 60 trials on SQLite.")
    if args.json:
        print(json.dumps({"rounds": args.rounds, "commands": result}))
        return
    print(f"{'command':<24} {'median':>8} {'range':>15} {'÷ import torch':>15}")
    for name, row in result.items():
        print(f"{name:<24} {row['median_s']:>7.2f}s {row['min_s']:>6.2f}–{row['max_s']:<6.2f}s "
              f"{row['ratio_to_import_torch']:>14.2f}")


if __name__ == "__main__":
    main()
