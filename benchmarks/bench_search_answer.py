"""What a search's answer about p costs the Effect of p page, against what the page spent before it,
and how often p's band holds a planted truth, against the band before it.

For synthetic search studies (benchmarks/scale_study.py: lpstudy.study.synthetic's trials written in
bulk, SQLite) of each size, in one run, in one
process: the read of the trials (load_study without curves, as the page reads), p's surrogate
profile (lpstudy.results.answers.search.search_effect: a Gaussian process fitted on at most 250
runs), the new parameter importance (type II shares with 400 refits, over importance_sample's
runs), and, for reference, the importance the page computed before (Optuna's PED-ANOVA over the
same fields, over at most 5,000 completed trials as the page took them). Each is timed as wall time
and as the process's CPU time (the CPU time is what a busy machine does not inflate). The ratio
column is (surrogate + new importance) / (read + PED-ANOVA importance): what the page's own
computing costs now against before, beside the read both share. Beside them, the surrogate's profile
as it was fitted before its band was calibrated (lpstudy/results/answers/surrogate.py at commit
BEFORE, read from git) on the same runs, and the new fit's CPU time over it.

Then planted searches (tests/search_planted.py's p_curve: 120 runs, p, lr and the gain independent,
lr's bowl, noise 0.02 a run) with no effect of p, a small one (1.5 ROPE at p = 1 and p = 4: 0.015 at
a loss of 2) and a large one (10 ROPE): per kind, the share of searches whose band holds the whole
true profile, that claim an effect (some p separated from p = 2) and that say "finds no effect",
now and before, each with its Wilson 95 % interval, and the mean CPU seconds of a fit.

    python benchmarks/bench_search_answer.py                      # 200 and 10,000 trials, 60 planted searches a kind
    python benchmarks/bench_search_answer.py --sizes 200 --planted 20 --db-dir /tmp/bench
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

STUDY = "lp-search"
BEFORE = "1db043d85ec3e391c455c941591aa7591ac9e4ad"  # the last commit whose band was drawn at the fitted hyperparameters
SURROGATE = "lpstudy/results/answers/surrogate.py"
# The ROPE of the page before (lpstudy.results.answers.options.DEFAULT_ROPE at 1db043d): ± 0.5 % of p = 2's
# loss, a share where today's ROPE is in nats; its "finds no effect" read with it
BEFORE_ROPE_SHARE = 0.005
PLANTED = {"no effect": 0.0, "small (1.5 ROPE)": 0.015, "large (10 ROPE)": 0.1}  # the profile's move at p = 1 and 4


def surrogate_before():
    """The surrogate module as it was at BEFORE (read from this repository's git), as a module."""
    import subprocess
    import types

    source = subprocess.run(["git", "show", f"{BEFORE}:{SURROGATE}"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType("surrogate_before")
    sys.modules[module.__name__] = module  # its dataclasses look their module up
    exec(compile(source, f"{BEFORE[:7]}:{SURROGATE}", "exec"), module.__dict__)
    return module


def warm_up(before) -> None:
    """One fit of each, untimed: the first fit in a process pays for imports and first calls (about
    9 s of CPU), which neither the page's read-ahead nor a later fit pays again."""
    from lpstudy.results.answers.search import search_effect
    from tests.search_planted import p_curve, study

    data = study(p_curve(seed=0))
    before_profile(before, data)
    search_effect(data)


def search_runs(data):
    """The runs, searched fields and losses the search's answer fits (as search_effect reads them)."""
    from lpstudy.results.analysis.searched import read_searched
    from lpstudy.results.analysis.selection import successful

    runs = successful(data.trials)
    return read_searched(runs, data.info.spec), runs["loss"].astype("float64")


def before_profile(before, data):
    """The profile before, its fit's CPU seconds."""
    from threadpoolctl import threadpool_limits

    searched, losses = search_runs(data)
    with threadpool_limits(limits=1):
        return timed(lambda: before.p_profile(losses, searched))


def timed(build):
    wall, cpu = time.perf_counter(), time.process_time()
    value = build()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def ped_anova(trials, spec) -> None:
    """The importance the page computed before this answer: Optuna's PED-ANOVA over p (∞ at an axis
    position), lr and gain_init of at most 5,000 completed trials."""
    import optuna
    from optuna.distributions import BaseDistribution, FloatDistribution

    from lpstudy.results.analysis.groups import p_positions

    done = trials[(trials["state"] == "COMPLETE") & trials["value"].notna()].sort_values("number")
    done = done.iloc[::max(1, len(done) // 5000)].dropna(subset=["p", "lr", "gain_init"])
    values = done[["p", "lr", "gain_init"]].astype("float64").copy()
    values["p"] = p_positions(values["p"])
    distributions: dict[str, BaseDistribution] = {name: FloatDistribution(float(values[name].min()), float(values[name].max()),
                                             log=name != "p") for name in values}
    frozen = [optuna.trial.create_trial(params=dict(zip(values.columns, row)), distributions=distributions, value=v)
              for row, v in zip(values.to_numpy().tolist(), done["value"].astype("float64").tolist())]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    study.add_trials(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.importance.get_param_importances(study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())


def measure(db: Path, n_trials: int, before) -> list:
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.analysis import param_importance
    from lpstudy.results.answers.search import search_effect
    from lpstudy.results.analysis.curve_sample import importance_sample
    from lpstudy.results.reading.frames import load_study
    from benchmarks.scale_study import write_scale_study

    url = f"sqlite:///{db}"
    if not db.exists():
        print(f"writing {n_trials:,} trials to {db} ...", file=sys.stderr, flush=True)
        write_scale_study(url, STUDY, n_trials, n_evals=20, seed=0)
    data, read_s, read_cpu = timed(lambda: load_study(open_reader(url), STUDY, curves=False))
    _, old_s, old_cpu = before_profile(before, data)
    _, before_s, before_cpu = timed(lambda: ped_anova(data.trials, data.info.spec))
    answer, surrogate_s, surrogate_cpu = timed(lambda: search_effect(data))
    _, importance_s, importance_cpu = timed(lambda: param_importance(importance_sample(data.trials), data.info.spec))
    ratio = (surrogate_cpu + importance_cpu) / (read_cpu + before_cpu)
    return [f"{len(data.trials):,}", f"{read_s:.2f} / {read_cpu:.2f}", f"{before_s:.2f} / {before_cpu:.2f}",
            f"{old_s:.2f} / {old_cpu:.2f}", f"{surrogate_s:.2f} / {surrogate_cpu:.2f}",
            f"{surrogate_cpu / old_cpu:.2f}", f"{importance_s:.2f} / {importance_cpu:.2f}",
            f"{ratio:.2f}", answer.sentence[:60] + "…"]


def covered(rows_p, low, high, ends: float) -> bool:
    """Whether a band holds the planted true profile (2 + ends · p_shape(p)) at every grid point."""
    import numpy as np

    from tests.search_planted import p_shape

    truth = 2.0 + ends * p_shape(np.asarray(rows_p, dtype="float64"))
    return bool(np.all((np.asarray(low) <= truth) & (truth <= np.asarray(high))))


def rate(hits: int, n: int) -> str:
    from lpstudy.results.analysis.intervals import wilson_interval

    low, high = wilson_interval(hits, n)
    return f"{hits}/{n} = {hits / n:.0%} [{low:.0%}, {high:.0%}]"


def planted(kind: str, ends: float, searches: int, before, progress) -> list:
    """Coverage and claims of the band now and before on `searches` planted searches of one kind."""
    import numpy as np

    from lpstudy.results.answers.answer_types import ProfilePoint
    from lpstudy.results.answers.search import search_effect
    from tests.search_planted import p_curve, study

    counts = {key: 0 for key in ("cover", "claim", "none", "cover_before", "claim_before", "none_before")}
    cpu = cpu_before = 0.0
    for seed in range(searches):
        data = study(p_curve(seed=seed, ends=ends))
        answer, _, spent = timed(lambda: search_effect(data))
        cpu += spent
        rows = answer.p_profile
        counts["cover"] += covered([r.p for r in rows], [r.low for r in rows], [r.high for r in rows], ends)
        counts["claim"] += bool(answer.separable)
        counts["none"] += "finds no effect" in answer.sentence
        old, _, spent = before_profile(before, data)
        cpu_before += spent
        counts["cover_before"] += covered(old.p, old.low, old.high, ends)
        mean, low, high = old.differences(2.0)
        apart = bool(((low > 0) | (high < 0)).any())
        widest = float(np.max(np.maximum(np.abs(low), np.abs(high))))
        at = int(np.argmin(np.abs(old.p - 2.0)))
        counts["claim_before"] += apart
        counts["none_before"] += (not apart) and widest <= BEFORE_ROPE_SHARE * abs(float(old.profile[at]))  # its rule
        progress()
    return [kind, rate(counts["cover"], searches), rate(counts["cover_before"], searches),
            rate(counts["claim"], searches), rate(counts["claim_before"], searches),
            rate(counts["none"], searches), rate(counts["none_before"], searches),
            f"{cpu / searches:.2f}", f"{cpu_before / searches:.2f}"]


def main(argv: list[str] | None = None) -> None:
    from rich.progress import Progress

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,10000", help="trials per study, comma-separated ('' for none)")
    parser.add_argument("--planted", type=int, default=60, help="planted searches of each kind (0 for none)")
    parser.add_argument("--db-dir", type=Path, default=Path("/tmp/lpstudy-bench-search"),
                        help="where the studies are written (reused when there)")
    add_result_argument(parser, "search_answer")
    args = parser.parse_args(argv)
    load = load_average()
    args.db_dir.mkdir(parents=True, exist_ok=True)
    before = surrogate_before()
    warm_up(before)
    rows = [["trials", "read (wall / CPU s)", "PED-ANOVA, before (s)", "surrogate profile before (s)",
             "surrogate profile (s)", "new / before surrogate (CPU)", "type II importance (s)",
             "new / before (CPU)", "sentence"]]
    for size in (int(s) for s in args.sizes.split(",") if s):
        rows.append(measure(args.db_dir / f"search-{size}.db", size, before))
        print(" | ".join(rows[-1]), flush=True)
    coverage = [["planted effect of p", "band holds the truth", "before", "claims an effect", "before",
                 "says \"finds no effect\"", "before", "fit (CPU s)", "before (CPU s)"]]
    with Progress() as progress:
        task = progress.add_task("planted searches", total=args.planted * len(PLANTED))
        for kind, ends in PLANTED.items():
            coverage.append(planted(kind, ends, args.planted, before, lambda: progress.advance(task)))
            print(" | ".join(coverage[-1]), flush=True)
    write_result(args.result, None, rows, title="What p's answer costs the Effect of p page, and how often its band holds",
                 load_at_start=load,
                 notes="Wall and CPU seconds in one process, one size after the other. The surrogate fits at most "
                       "250 runs and the importance at most 2,000, so both stay flat above those sizes. \"Before\": "
                       f"the surrogate at commit {BEFORE[:7]}, its band drawn at the fitted hyperparameters.",
                 more_tables=[(f"Planted searches ({args.planted} a kind: tests/search_planted.py's p_curve, 120 runs, "
                               "seeds 0 on): the share whose band holds the whole true profile (every grid point), "
                               "that claim an effect of p (some p's simultaneous band of the difference to p = 2 "
                               "excludes 0) and that say \"finds no effect\", now and before, with Wilson 95 % "
                               "intervals; the mean CPU seconds of a fit (now: the whole search_effect).", coverage)]
                 if args.planted else [])


if __name__ == "__main__":
    main()
