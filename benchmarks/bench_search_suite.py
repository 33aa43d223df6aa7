"""The search defaults, chosen on a suite of grids and checked on grids they were not chosen on.

Replays every method of the list on each grid of the suite and on the held-out grid (lpstudy.results.replay,
as `lpstudy replay` does), scores each method with intervals (lpstudy.results.replay.scores: what the
user gets, the returned configuration's mean loss over all folds; search efficiency against the tuning
fold's own best), applies
the choice rule over the suite (lpstudy.results.replay.suite), leaves each grid out in turn, and
checks search's default on every grid. Writes benchmarks/results/search-suite.md (command, machine,
date) and benchmarks/results/replay/suite.json (every grid's scores, per seed too).

Each trace is cached as it finishes under benchmarks/results/replay/GRID.traces.jsonl (git-ignored),
keyed on the grid file's hash, the budget, the trial cap, the code that makes a trace and Optuna's
version (benchmarks/replay_cache.py): an interrupted run resumes where it stopped, a run with more
seeds replays only the new ones, and a change to the scores replays nothing.

    python benchmarks/bench_search_suite.py [--seeds 100] [--jobs 2] [--grids ...] [--traces-only] [--fresh]

About 0.5 s of one core a replay (0.02 s for random search without a pruner, 2 s for TPE with a pruner
on a 216-run grid): the catalogue's 26 methods × 100 seeds on the four grids take about an hour and a
half of one core. Run it under `nice`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUITE = ("mid600", "smoke-inf", "matched800")
HELD_OUT = ("small300-inf",)
# The catalogue of `lpstudy replay` (every sampler with every pruner, with and without the spread phase;
# the GP sampler left out: a GP fit a trial, about 40 times a CMA-ES seed's time).
METHODS = "random+*,tpe+*,cmaes+*,tpe-optuna+none,*+*@8"


if TYPE_CHECKING:
    from benchmarks.results_file import Rows
    from lpstudy.results.replay.grid_table import GridTable
    from lpstudy.results.replay.methods import Method


def grid_path(name: str) -> Path:
    return ROOT / "benchmarks" / "data" / f"grid-{name}.json.gz"


def replay_grid(name: str, methods: str, seeds: int, jobs: int, cache_dir: Path, budget: float, max_trials: int,
                fresh: bool, cached: bool = False, workers: int = 1) -> dict:
    """The grid's replay (ReplayResult.to_json()) of `methods` × seeds 0..seeds-1 with `workers`
    simulated workers, each trace from the cache where it holds one under this key
    (benchmarks/replay_cache.py), else replayed now (replay_traces)."""
    from lpstudy.results.replay.scores import score

    table, traces = replay_traces(name, methods, seeds, jobs, cache_dir, budget, max_trials, fresh, cached, workers)
    return score(table, traces, budget, list(range(seeds))).to_json()


def replay_traces(name: str, methods: str, seeds: int, jobs: int, cache_dir: Path, budget: float, max_trials: int,
                  fresh: bool, cached: bool = False, workers: int = 1) -> tuple[GridTable, dict[Method, list]]:
    """Replay what the cache lacks of `methods` × seeds 0..seeds-1 and keep it there; the grid and each
    method's traces (cached: every seed the cache holds, only the methods it holds)."""
    from benchmarks.replay_cache import TraceCache, cache_key
    from lpstudy.results.replay.grid_table import read_table
    from lpstudy.results.replay.traces import run_traces
    from lpstudy.results.replay.methods import default_method, pick_methods
    path = cache_dir / (f"{name}.traces.jsonl" if workers == 1 else f"{name}.w{workers}.traces.jsonl")
    if fresh and path.exists():
        path.unlink()
    cache = TraceCache(path, cache_key(grid_path(name), budget, max_trials, workers), read_only=cached)
    table = read_table(grid_path(name))
    picked = pick_methods(methods)
    if default_method() not in picked:
        picked.append(default_method())
    if cached:  # score what the cache holds: each method its seeds 0, 1, ... there, a method without any left out
        picked = [m for m in picked if (m.name, 0) in cache]
    todo = [(m, s) for s in range(seeds) for m in picked if (m.name, s) not in cache and not cached]
    start, done = time.time(), [0]

    def keep(method, seed, trace) -> None:
        cache.add(method.name, seed, trace)
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == len(todo):
            print(f"{name}: {done[0]}/{len(todo)} replays, {time.time() - start:.0f} s", file=sys.stderr, flush=True)

    if todo:
        print(f"{name}: {len(todo)} replays to run, {len(picked) * seeds - len(todo)} from {path}",
              file=sys.stderr, flush=True)
        run_traces(table, todo, budget, jobs, max_trials, keep, workers)
    traces = {}
    for m in picked:  # every seed the cache holds for the method, seeds 0, 1, ... (at least `seeds`)
        n = 0 if cached else seeds
        while (m.name, n) in cache:
            n += 1
        traces[m] = [cache.traces[(m.name, s)] for s in range(n)]
    return table, traces


def pct(x: float) -> str:
    return f"{x:.0%}"


def share(x: float, ci) -> str:
    return f"{x:.0%} [{ci[0]:.0%}–{ci[1]:.0%}]"


def f_text(x: float | None) -> str:
    return "∞" if x is None else f"{x:.3f}"


def f_cell(m: dict) -> str:
    low, high = m["f_ci"]
    return f"{f_text(m['f_median'])} [{f_text(low)}–{f_text(high)}]"


def p_text(p: float) -> str:
    return f"{p:.2f}" if p >= 0.01 else f"{p:.0e}"


def finish(args, plain: dict[str, dict]) -> None:
    """Score the suite, write benchmarks/results/replay/suite.json and the result file (neither with
    --result none)."""
    from lpstudy.results.replay.result_types import GridReplay
    from lpstudy.results.replay.suite import SuiteResult

    suite_names = [n for n in SUITE if n in plain]
    suite = SuiteResult(suite_names, [GridReplay.from_plain(plain[n]) for n in suite_names]).to_json()
    held = {n: plain[n] for n in HELD_OUT if n in plain}
    out = ROOT / "benchmarks" / "results" / "replay"
    if args.result != "none":
        (out / "suite.json").write_text(json.dumps({**suite, "held_out": [{**g, "name": n} for n, g in held.items()]}))
    write_markdown(args.result, suite, held)
    print(f"chosen on the suite: {suite['chosen']}", file=sys.stderr)


TODAYS_DEFAULT = "tpe+none@8"  # search's default before issue 45 (no race): the compute every other is measured against


def regret_text(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def write_markdown(result: str, suite: dict, held: dict[str, dict]) -> None:
    from benchmarks.results_file import write_result
    from lpstudy.results.replay.result_types import MethodRow
    from lpstudy.results.replay.suite import paired_p

    names = suite["grid"]["suite"]
    grids = {g["name"]: g for g in suite["grids"]}
    rows = {n: {m["name"]: m for m in g["methods"]} for n, g in grids.items()}
    rows.update({n: {m["name"]: m for m in g["methods"]} for n, g in held.items()})
    ranking = [["method", "seeds", "worst within 2 %", *[f"{n}: within 2 % · 1 % · mean regret · reach" for n in names]]]
    for m in suite["methods"]:
        default = " (default)" if m["default_on"] else ""
        counts = [str(m["seeds"][n]) for n in names]
        cells = []
        for n in names:
            r = rows[n][m["name"]]
            cells.append(f"{share(r['hold_share'], r['hold_ci'])} · {pct(r['hold_tight_share'])} · "
                         f"{regret_text(r['regret_nats_mean'])} · {pct(r['reach_share'])}")
        ranking.append([m["name"] + default, counts[0] if len(set(counts)) == 1 else "/".join(counts),
                        pct(m["worst_hold_share"]), *cells])
    notes = ("**What the user gets**, ranked by each method's worst share over the suite's grids, then the mean of its "
             "mean regret. Within 2 %: the share of seeds whose returned configuration (at the end of the budget, "
             "0.4 of the grid's compute) has a mean loss over all the grid's folds within 2 % of the best "
             "configuration's, with its Wilson 95 % interval; 1 %: the same with 1 %; mean regret: the mean over seeds "
             "of that mean loss minus the best's, in nats (the median in the side-by-side table below); reach: the share within ε of the tuning fold's best (search "
             "efficiency, the ranking before issue 45). The same target for every method, whatever folds it tuned or "
             "raced on. `/raceR`: the R leading configurations raced on more folds (up to 5, every fold of these "
             "grids; `xF`: up to F) before one is returned, every evaluation counted in the budget (lpstudy.study."
             "intensify). Seed s tunes on fold s mod K; methods share seeds. The traces were replayed by this script "
             "with --traces-only (a cache keyed on each grid's hash, the budget, the code and Optuna's version) and "
             "scored here with --cached.")
    grid_rows = [["grid", "configurations × folds", "best (mean over folds)", "2 % of it", "fold spread", "ε",
                  "within 2 % of the best mean", "within ε of each fold's best"]]
    from lpstudy.results.replay.grid_table import read_table
    from lpstudy.results.replay.scores import HOLD_MARGIN, fold_losses

    for n in [*names, *held]:
        g = grids.get(n) or held[n]
        table = read_table(grid_path(n))
        losses = fold_losses(table)
        means = losses.mean(axis=1)
        eps = g["best"]["epsilon"]
        within = [int((losses[:, i] - losses[:, i].min() <= eps).sum()) for i in range(losses.shape[1])]
        grid_rows.append([n + (" (held out)" if n in held else ""), f"{g['grid']['configs']} × {g['grid']['folds']}",
                          f"{g['best']['config']} {g['best']['loss']:.4f}", f"{HOLD_MARGIN * means.min():.4f}",
                          f"{g['fold_spread']:.4f}", f"{eps:.4f}",
                          str(int((means - means.min() <= HOLD_MARGIN * means.min()).sum())),
                          " / ".join(map(str, within))])
    alike = [["method", *[f"{n}: p within 2 % · p regret" for n in names]]]
    for a in suite["alike"]:
        alike.append([a["name"], *[f"{p_text(a['tests'][n]['hold'])} · {p_text(a['tests'][n]['regret'])}" for n in names]])
    loo = [["grid left out", "chosen by the other grids", "its within 2 %", "its mean regret", "best there",
            "best's within 2 %", "p within 2 % · p regret", "told apart"]]
    for r in suite["leave_one_out"]:
        loo.append([r["held_out"], r["chosen"], share(r["chosen_hold_share"], r["chosen_hold_ci"]),
                    regret_text(r["chosen_regret"]), r["best"], share(r["best_hold_share"], r["best_hold_ci"]),
                    f"{p_text(r['p_hold'])} · {p_text(r['p_regret'])}", "yes" if r["told_apart"] else "no"])
    default_name = next((m["name"] for m in suite["methods"] if m["default_on"]), None)
    side = [["grid", "method", "seeds", "within 2 % [95 %]", "within 1 %", "median regret (nats) [95 %]",
             "mean regret", "reach",
             "compute (× today's)", "within 2 % in ≥ 80 %", "p within 2 % · p regret against today's"]]
    for n in [*names, *held]:
        today = rows[n].get(TODAYS_DEFAULT)
        for label, name in (("today's default", TODAYS_DEFAULT), ("search's default", default_name)):
            m = rows[n].get(name)
            if m is None or (label == "search's default" and name == TODAYS_DEFAULT):
                continue
            low, high = m["regret_nats_ci"]
            p = paired_p(MethodRow.from_plain(today), MethodRow.from_plain(m)) if today is not None and m is not today \
                else None
            side.append([n + (" (held out)" if n in held else ""), f"{label}: {name}", m["seeds"],
                         share(m["hold_share"], m["hold_ci"]), pct(m["hold_tight_share"]),
                         f"{regret_text(m['regret_nats_median'])} [{regret_text(low)}–{regret_text(high)}]",
                         regret_text(m["regret_nats_mean"]), pct(m["reach_share"]),
                         "–" if today is None else f"{m['spent_share'] / today['spent_share']:.2f}",
                         "yes" if m["hold_share"] >= 0.8 else "no",
                         "–" if p is None else f"{p_text(p.hold)} · {p_text(p.regret)}"])
    more: list[tuple[str, Rows]] = [
        ("The goal of issue 45, side by side in one run per grid: search's default before the race and search's "
         "default now, on every grid of the suite and the held-out grid. Compute: the median compute a seed spent "
         "(race evaluations included) over today's default's.", side),
        ("The grids. Fold spread: one fold's noise in a configuration's loss, the configuration × fold residuals pooled "
         "over the stable better half of the configurations; ε is the larger of it and 0.5 % of the best loss. "
         "Within 2 %: the configurations whose mean over all folds is within 2 % of the best's; the last column "
         "counts those within ε of each fold's best.", grid_rows),
        (f"The leader by the ranking above: **{suite['leader']}**. The methods with a spread phase that no paired test "
         "tells apart from it on any grid (p of McNemar's exact test on within 2 % and of the sign test on regret, "
         "over the seeds both ran; told apart below 0.05). The rule chooses the simplest of these (no pruner first, "
         f"then random search before a model-based sampler; the number of raced leaders a setting, not a simpler "
         f"method, so among races alike the leader's stands): **{suite['chosen']}**.", alike),
        ("Leave one grid out: the rule applied to the other grids alone, its choice scored on the grid left out, beside "
         "the best method with a spread phase there by the same ranking, and the paired tests between the two.", loo),
    ]
    for name, g in held.items():
        hrows = {m["name"]: m for m in g["methods"]}
        held_rows: list[list[object]] = [["method", "seeds", "within 2 %", "within 1 %", "mean regret", "reach"]]
        for m in sorted(hrows.values(), key=lambda m: m["rank"]):
            held_rows.append([m["name"], m["seeds"], share(m["hold_share"], m["hold_ci"]), pct(m["hold_tight_share"]),
                          regret_text(m["regret_nats_mean"]), pct(m["reach_share"])])
        more.append((f"Held out of the suite: {name} ({g['grid']['configs']} configurations × {g['grid']['folds']} "
                     f"folds, {g['grid']['steps_total']:,} steps; best {g['best']['config']} at {g['best']['loss']:.4f}).",
                     held_rows))
    write_result(result, None, ranking, notes, title="Search methods over a suite of grids", more_tables=more)


def main() -> None:
    from benchmarks.results_file import add_result_argument
    from lpstudy.results.replay.traces import BUDGET, MAX_TRIALS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--held-out-methods", default=None,
                        help="the methods on the held-out grid (default: --methods)")
    parser.add_argument("--grids", default=",".join(SUITE + HELD_OUT),
                        help="the grids to replay, comma-separated (default: the suite and the held-out grid)")
    parser.add_argument("--traces-only", action="store_true",
                        help="replay what the cache lacks and stop (no scores, no result file): a long run's first part")
    parser.add_argument("--cached", action="store_true",
                        help="replay nothing: score every method the cache holds on every seed it holds (the "
                             "result file says how many)")
    parser.add_argument("--fresh", action="store_true", help="replay again, dropping the cached traces")
    add_result_argument(parser, "search-suite")
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    cache = ROOT / "benchmarks" / "results" / "replay"
    names = [n.strip() for n in args.grids.split(",") if n.strip()]
    methods = {n: args.held_out_methods if n in HELD_OUT and args.held_out_methods else args.methods for n in names}
    if args.traces_only:
        for n in names:
            replay_traces(n, methods[n], args.seeds, args.jobs, cache, BUDGET, MAX_TRIALS, args.fresh, args.cached)
        return
    plain = {n: replay_grid(n, methods[n], args.seeds, args.jobs, cache, BUDGET, MAX_TRIALS, args.fresh, args.cached)
             for n in names}
    finish(args, plain)


if __name__ == "__main__":
    main()
