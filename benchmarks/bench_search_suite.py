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
import json
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


def write_markdown(result: str, suite: dict, held: dict[str, dict], seeds: int) -> None:
    from benchmarks.results_file import write_result

    names = suite["grid"]["suite"]
    ranking = [["method", "worst reach", "mean Borda", *names]]
    for m in suite["methods"]:
        default = f" (default on {', '.join(m['default_on'])})" if m["default_on"] else ""
        ranking.append([m["name"] + default, pct(m["worst_reach_share"]), f"{m['mean_borda']:.1f}",
                        *[f"{pct(m['reach_shares'][n])} · F {f_text(m['f_medians'][n])}" for n in names]])
    loo = [["grid left out", "chosen by the other grids", "its reach", "its F", "its Borda", "best there", "best's reach"]]
    for r in suite["leave_one_out"]:
        loo.append([r["held_out"], r["chosen"], pct(r["chosen_reach_share"]), f_text(r["chosen_f_median"]),
                    r["chosen_borda"], r["best"], pct(r["best_reach_share"])])
    defaults = [["grid", "search's default", "reach", "F", "Borda"]]
    defaults += [[n, row["method"], pct(row["reach_share"]), f_text(row["f_median"]), row["borda"]]
                 for n, row in suite["default"].items() if row]
    more = [(f"Leave one grid out. Chosen on the whole suite, among the methods with a spread phase (a first run "
             f"needs one): **{suite['chosen']}**.", loo), ("search's default on each grid of the suite.", defaults)]
    for name, plain in held.items():
        rows = {m["name"]: m for m in plain["methods"]}
        best = min(plain["methods"], key=lambda m: m["borda"])
        default = next(m for m in plain["methods"] if m["default"])
        shown = [("search's default: " + default["name"], default)]
        if suite["chosen"] in rows:
            shown.append(("the suite's choice: " + suite["chosen"], rows[suite["chosen"]]))
        shown.append(("best there: " + best["name"], best))
        table = [["method", "reach", "F ≤ 0.10", "F", "Borda"]]
        table += [[label, pct(m["reach_share"]), pct(m["target_share"]), f_text(m["f_median"]), m["borda"]]
                  for label, m in shown]
        more.append((f"Held out of the suite: {name} ({plain['grid']['configs']} configurations × "
                     f"{plain['grid']['folds']} folds, {plain['grid']['steps_total']:,} steps; best "
                     f"{plain['best']['config']} at {plain['best']['loss']:.4f}, ε {plain['best']['epsilon']:.4f}).", table))
    notes = (f"The suite, ranked by each method's worst reach over the grids, then its mean Borda rank. {seeds} seeds "
             "a method, each allowed 0.4 of its grid's compute; reach: the share of seeds within ε of the grid's best; "
             "F: the median fraction of the grid's compute spent until then (∞: most seeds never got there).")
    write_result(result, None, ranking, notes, title="Search methods over a suite of grids", more_tables=more)


def main() -> None:
    from benchmarks.results_file import add_result_argument

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--fresh", action="store_true", help="replay every grid again, ignoring the cached JSON")
    add_result_argument(parser, "search-suite")
    args = parser.parse_args()
    import optuna

    from lpstudy.results.replay_suite import SuiteResult

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    cache = ROOT / "benchmarks" / "results" / "replay"
    grids = [replay_grid(n, args.methods, args.seeds, args.jobs, cache, args.fresh) for n in SUITE]
    held = {n: replay_grid(n, args.methods, args.seeds, args.jobs, cache, args.fresh) for n in HELD_OUT}
    suite = SuiteResult(list(SUITE), grids).to_json()
    write_markdown(args.result, suite, held, args.seeds)
    print(f"chosen on the suite: {suite['chosen']}", file=sys.stderr)


if __name__ == "__main__":
    main()
