"""The search with many workers at once: the suite replayed with W asynchronous workers on one clock.

For each W of --workers, every method of --methods is replayed on each grid of the suite and the
held-out grids with W simulated workers (lpstudy.results.replay.traces.replay_one: trials asked as
workers free, the sampler beside the running trials, races taken by whichever worker frees, each run
its stored seconds a step), at the same total compute as one worker (0.4 of each grid's). Scored
as the suite benchmark scores (what the user gets: the returned configuration's mean loss over all
folds, within 2 % and 1 % of the best, Wilson intervals; median regret), with the compute spent, the
races' and repeats' share of it, and the simulated wall-clock time to the returned configuration's
final choice against W = 1's divided by W (the ideal). The choice rule (lpstudy.results.replay.suite)
is applied over the suite at each W, with leave-one-grid-out. Writes
benchmarks/results/search-workers.md (command, machine, date) and
benchmarks/results/replay/workers.json.

A method may write {W} for the worker count (at least 8): `tpe+none@{W}/race2` is a spread phase of
max(8, W) trials. Traces are cached as bench_search_suite.py caches them, one file per grid and W.

    nice python benchmarks/bench_search_workers.py --seeds 20 [--workers 1,8,32,128] [--methods ...]

About 0.05–1 s of one core a replay.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUITE = ("mid600", "smoke-inf", "matched800")
HELD_OUT = ("small300-inf", "needle-smoke03")
WORKERS = "1,8,32,128"
METHODS = ("tpe+none@8/race2,tpe+none@8/race2r20,tpe+none@{W}/race2r20,tpe+none@8/race3r20,"
           "random+none@8/race3r20,tpe+none@8")
IDEAL_SLACK = 1.5  # issue 54's goal: time to the choice within 1.5 × W = 1's / W


def methods_at(template: str, workers: int) -> list[tuple[str, str]]:
    """(template, method name at this W) for each method of the list; {W} is max(8, W)."""
    out: list[tuple[str, str]] = []
    for part in (p.strip() for p in template.split(",")):
        if part:
            name = part.replace("{W}", str(max(8, workers)))
            if name not in [n for _, n in out]:
                out.append((part, name))
    return out


def pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def share(x: float, ci) -> str:
    return f"{x:.0%} [{ci[0]:.0%}–{ci[1]:.0%}]"


def duration(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "–"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.2f} h"


def main() -> None:
    from benchmarks.bench_search_suite import replay_grid
    from benchmarks.results_file import add_result_argument, load_average, write_result
    from lpstudy.results.replay.scores import HOLD_GOAL
    from lpstudy.results.replay.result_types import GridReplay
    from lpstudy.results.replay.suite import SuiteResult
    from lpstudy.results.replay.traces import BUDGET, MAX_TRIALS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--workers", default=WORKERS, help="the worker counts, comma-separated (1 first)")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--grids", default=",".join(SUITE + HELD_OUT))
    parser.add_argument("--fresh", action="store_true")
    add_result_argument(parser, "search-workers")
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    load_at_start = load_average()
    cache = ROOT / "benchmarks" / "results" / "replay"
    grids = [n.strip() for n in args.grids.split(",") if n.strip()]
    counts = [int(w) for w in args.workers.split(",")]
    plain: dict[int, dict[str, dict]] = {}
    for w in counts:
        names = ",".join(n for _, n in methods_at(args.methods, w))
        plain[w] = {g: replay_grid(g, names, args.seeds, args.jobs, cache, BUDGET, MAX_TRIALS, args.fresh, workers=w)
                    for g in grids}
    out = {"workers": counts, "seeds": args.seeds, "budget": BUDGET, "methods": args.methods, "per_workers": {}}
    side: list[list[object]] = [["W", "method", "grid", "within 2 % [95 %]", "within 1 %", "median regret", "compute", "races",
             "repeats", "to its choice", "× ideal", "to the budget's end", "× ideal"]]
    choice: list[list[object]] = [["W", "leader", "chosen on the suite", "worst within 2 % (suite)", "worst within 2 % (held out)",
               "meets the goal on every grid"]]
    loo_rows: list[list[object]] = [["W", "grid left out", "chosen by the others", "its within 2 %", "best there", "best's within 2 %",
                 "told apart"]]
    base = plain.get(1, {})
    for w in counts:
        suite_names = [g for g in SUITE if g in plain[w]]
        suite = SuiteResult(suite_names, [GridReplay.from_plain(plain[w][g]) for g in suite_names]) \
            if len(suite_names) >= 2 else None
        summary = suite.to_json() if suite else {}
        out["per_workers"][str(w)] = {"suite": summary, "held_out": {g: plain[w][g] for g in grids if g in HELD_OUT}}
        for template, name in methods_at(args.methods, w):
            for g in grids:
                row = next((m for m in plain[w][g]["methods"] if m["name"] == name), None)
                if row is None:
                    continue
                one = next((m for m in base.get(g, {}).get("methods", []) if m["name"] == methods_at(template, 1)[0][1]),
                           None) if base else None
                ratio = ratio_end = None
                if one and one["chosen_at_median"] and row["chosen_at_median"] is not None:
                    ratio = row["chosen_at_median"] / (one["chosen_at_median"] / w)
                if one and one["clock_end_median"] and row["clock_end_median"] is not None:
                    ratio_end = row["clock_end_median"] / (one["clock_end_median"] / w)
                side.append([w, name, g + (" (held out)" if g in HELD_OUT else ""), share(row["hold_share"], row["hold_ci"]),
                             pct(row["hold_tight_share"]),
                             "–" if row["regret_nats_median"] is None else f"{row['regret_nats_median']:.4f}",
                             f"{row['spent_share']:.3f}", pct(row["race_share"]), pct(row["duplicate_share"]),
                             duration(row["chosen_at_median"]), "–" if ratio is None else f"{ratio:.2f}",
                             duration(row["clock_end_median"]), "–" if ratio_end is None else f"{ratio_end:.2f}"])
        if suite:
            chosen = summary["chosen"]
            held = [next(m for m in plain[w][g]["methods"] if m["name"] == chosen)["hold_share"]
                    for g in grids if g in HELD_OUT]
            every = all(next(m for m in plain[w][g]["methods"] if m["name"] == chosen)["hold_share"] >= HOLD_GOAL
                        for g in grids)
            choice.append([w, summary["leader"], chosen, pct(suite.worst_hold(chosen)), pct(min(held) if held else None),
                           "yes" if every else "no"])
            for r in summary["leave_one_out"]:
                loo_rows.append([w, r["held_out"], r["chosen"], share(r["chosen_hold_share"], r["chosen_hold_ci"]),
                                 r["best"], share(r["best_hold_share"], r["best_hold_ci"]),
                                 "yes" if r["told_apart"] else "no"])
    (cache / "workers.json").write_text(json.dumps(out))
    notes = (f"Each method replayed with W asynchronous workers on one simulated clock, {args.seeds} seeds a method, "
             f"each seed {BUDGET} of the grid's compute whatever W (a worker asks a trial only while the compute spent "
             "and the running trials' runs to their end stay within it). Within 2 % (1 %): the share of seeds whose "
             "returned configuration's mean loss over all the grid's folds is within 2 % (1 %) of the best's, Wilson "
             "95 % interval; median regret in nats. Compute: the median a seed spent, as a fraction of the grid's; "
             "races: the races' share of it; repeats: the share spent on a grid configuration and fold already run or "
             "running (TPE's continuous proposals that land on a grid point already taken: at W = 1 as at W). To its "
             "choice: the median simulated time until the search first returned the configuration it returns at the "
             "end (each run its stored seconds a step, lpstudy.results.replay.clock); × ideal: that over W = 1's / W "
             f"(issue 54's goal: at most {IDEAL_SLACK}); to the budget's end: the time to the last trial's end. "
             "Held out: small300-inf, and needle-smoke03 (smoke-inf thinned to its folds 0 and 3 by "
             "benchmarks/thin_grid.py: one configuration within 2 % of the best mean), which shares its runs with "
             "smoke-inf and so is never a held-out test of a choice made with smoke-inf in it, only a check.")
    more = [("The choice rule (lpstudy.results.replay.suite) over the suite's three grids at each W, and the chosen "
             "method's worst share within 2 % on the held-out grids. The goal: within 2 % in ≥ 80 % of seeds on "
             "every grid.", choice),
            ("Leave one grid out at each W: the rule on the other two suite grids, its choice scored on the grid left "
             "out.", loo_rows)]
    write_result(args.result, None, side, notes, title="The search with W asynchronous workers",
                 more_tables=more, load_at_start=load_at_start)


if __name__ == "__main__":
    main()
