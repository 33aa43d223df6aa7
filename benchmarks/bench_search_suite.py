"""The search defaults, chosen on a suite of grids and checked on grids they were not chosen on.

Replays every method of the list on each grid of the suite (lpstudy.results.replay, as `lpstudy
replay` does), ranks them over the suite (lpstudy.results.replay_suite: worst share of seeds within
ε, then mean Borda rank), leaves each grid out in turn, and scores the suite's choice and search's
default on the held-out grids. Writes benchmarks/results/search-suite.md (command, machine, date)
and one JSON per grid under benchmarks/results/replay/, which later runs reuse (the replay is
deterministic per grid, method list and seed), so an interrupted run resumes grid by grid.

    python benchmarks/bench_search_suite.py [--seeds 20] [--jobs 2] [--fresh]

About an hour of one core per grid with the default method list; run it under `nice`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUITE = ("mid600", "smoke-inf", "matched800")
HELD_OUT = ("small300-inf",)
# The catalogue of `lpstudy replay` (every sampler with every pruner, with and without the spread phase;
# the GP sampler left out: a GP fit a trial, about 40 times a CMA-ES seed's time).
METHODS = "random+*,tpe+*,cmaes+*,tpe-optuna+none,*+*@8"


def grid_path(name: str) -> Path:
    return ROOT / "benchmarks" / "data" / f"grid-{name}.json.gz"


def replay_grid(name: str, methods: str, seeds: int, jobs: int, cache: Path, fresh: bool) -> dict:
    from lpstudy.results.grid_table import read_table
    from lpstudy.results.replay import run_replay
    from lpstudy.results.replay_methods import default_method, pick_methods

    path = cache / f"{name}.json"
    key = {"methods": methods, "seeds": seeds}
    table = read_table(grid_path(name))
    if path.exists() and not fresh:
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            print(f"{name}: reused {path.relative_to(ROOT)}", file=sys.stderr)
            plain = stored["replay"]
            for m in plain["methods"]:  # search's default as the code has it now
                m["default"] = m["name"] == default_method().name
            return plain
    picked = pick_methods(methods)
    if default_method() not in picked:
        picked.append(default_method())
    start = time.time()
    done = [0]

    def progress(method, seed) -> None:
        done[0] += 1
        if done[0] % 20 == 0:
            print(f"{name}: {done[0]}/{len(picked) * seeds} replays, {time.time() - start:.0f} s", file=sys.stderr)

    plain = run_replay(table, picked, list(range(seeds)), jobs=jobs, on_done=progress).to_json()
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "replay": plain}))
    return plain


def pct(x: float) -> str:
    return f"{x:.0%}"


def f_text(x: float | None) -> str:
    return "∞" if x is None else f"{x:.3f}"


def write_markdown(out: Path, command: str, suite: dict, held: dict[str, dict], seeds: int) -> None:
    names = suite["grid"]["suite"]
    lines = [
        "# Search methods over a suite of grids",
        "",
        f"- command: `{command}`",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end",
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- {seeds} seeds a method, each allowed 0.4 of its grid's compute; reach: share of seeds within ε of "
        "the grid's best; F: median fraction of the grid's compute spent until then (∞: most seeds never got there)",
        "",
        "## The suite, ranked (worst reach over the grids, then mean Borda rank)",
        "",
        "| method | worst reach | mean Borda | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for m in suite["methods"]:
        default = f" (default on {', '.join(m['default_on'])})" if m["default_on"] else ""
        cells = [f"{pct(m['reach_shares'][n])} · F {f_text(m['f_medians'][n])}" for n in names]
        lines.append(f"| {m['name']}{default} | {pct(m['worst_reach_share'])} | {m['mean_borda']:.1f} | "
                     + " | ".join(cells) + " |")
    lines += ["", "## Leave one grid out", "",
              "| grid left out | chosen by the other grids | its reach | its F | its Borda | best there | best's reach |",
              "|---|---|---|---|---|---|---|"]
    for r in suite["leave_one_out"]:
        lines.append(f"| {r['held_out']} | {r['chosen']} | {pct(r['chosen_reach_share'])} | "
                     f"{f_text(r['chosen_f_median'])} | {r['chosen_borda']} | {r['best']} | {pct(r['best_reach_share'])} |")
    lines += ["", f"Chosen on the whole suite, among the methods with a spread phase (a first run needs one): **{suite['chosen']}**.", "",
              "## search's default on each grid", "",
              "| grid | method | reach | F | Borda |", "|---|---|---|---|---|"]
    for name, row in suite["default"].items():
        if row:
            lines.append(f"| {name} | {row['method']} | {pct(row['reach_share'])} | {f_text(row['f_median'])} | {row['borda']} |")
    for name, plain in held.items():
        rows = {m["name"]: m for m in plain["methods"]}
        best = min(plain["methods"], key=lambda m: m["borda"])
        default = next(m for m in plain["methods"] if m["default"])
        chosen = rows.get(suite["chosen"])
        lines += ["", f"## Held out of the suite: {name}", "",
                  f"{plain['grid']['configs']} configurations × {plain['grid']['folds']} folds, "
                  f"{plain['grid']['steps_total']:,} steps; best {plain['best']['config']} at {plain['best']['loss']:.4f}, "
                  f"ε {plain['best']['epsilon']:.4f}.", "",
                  "| method | reach | F ≤ 0.10 | F | Borda |", "|---|---|---|---|---|"]
        shown = [("search's default: " + default["name"], default), ("best there: " + best["name"], best)]
        if chosen is not None:
            shown.insert(1, ("the suite's choice: " + chosen["name"], chosen))
        for label, m in shown:
            lines.append(f"| {label} | {pct(m['reach_share'])} | {pct(m['target_share'])} | {f_text(m['f_median'])} | {m['borda']} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--fresh", action="store_true", help="replay every grid again, ignoring the cached JSON")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "search-suite.md")
    args = parser.parse_args()
    import optuna

    from lpstudy.results.replay_suite import SuiteResult

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    cache = ROOT / "benchmarks" / "results" / "replay"
    grids = [replay_grid(n, args.methods, args.seeds, args.jobs, cache, args.fresh) for n in SUITE]
    held = {n: replay_grid(n, args.methods, args.seeds, args.jobs, cache, args.fresh) for n in HELD_OUT}
    suite = SuiteResult(list(SUITE), grids).to_json()
    command = "python benchmarks/bench_search_suite.py " + " ".join(sys.argv[1:])
    write_markdown(args.out, command.strip(), suite, held, args.seeds)
    print(f"wrote {args.out.relative_to(ROOT)}; chosen on the suite: {suite['chosen']}", file=sys.stderr)


if __name__ == "__main__":
    main()
