"""What a search's answer about p costs the Effect of p page, against what the page spent before it.

For synthetic search studies (benchmarks/scale_study.py: lpstudy.study.synthetic's trials written in
bulk, SQLite) of each size, in one run, in one
process: the read of the trials (load_study without curves, as the page reads), p's surrogate
profile (lpstudy.results.answers.search.search_effect: a Gaussian process fitted on at most 250
runs), the new parameter importance (type II shares with 400 refits, over importance_sample's
runs), and, for reference, the importance the page computed before (Optuna's PED-ANOVA over the
same fields, over at most 5,000 completed trials as the page took them). Each is timed as wall time
and as the process's CPU time (the CPU time is what a busy machine does not inflate). The ratio
column is (surrogate + new importance) / (read + PED-ANOVA importance): what the page's own
computing costs now against before, beside the read both share.

    python benchmarks/bench_search_answer.py                      # 200 and 10,000 trials
    python benchmarks/bench_search_answer.py --sizes 200 --db-dir /tmp/bench
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


def timed(build):
    wall, cpu = time.perf_counter(), time.process_time()
    value = build()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def ped_anova(trials, spec) -> None:
    """The importance the page computed before this answer: Optuna's PED-ANOVA over p (∞ at an axis
    position), lr and gain_init of at most 5,000 completed trials."""
    import optuna
    from optuna.distributions import FloatDistribution

    from lpstudy.results.analysis.groups import p_positions

    done = trials[(trials["state"] == "COMPLETE") & trials["value"].notna()].sort_values("number")
    done = done.iloc[::max(1, len(done) // 5000)].dropna(subset=["p", "lr", "gain_init"])
    values = done[["p", "lr", "gain_init"]].astype("float64").copy()
    values["p"] = p_positions(values["p"])
    distributions = {name: FloatDistribution(float(values[name].min()), float(values[name].max()),
                                             log=name != "p") for name in values}
    frozen = [optuna.trial.create_trial(params=dict(zip(values.columns, row)), distributions=distributions, value=v)
              for row, v in zip(values.to_numpy().tolist(), done["value"].astype("float64").tolist())]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    study.add_trials(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.importance.get_param_importances(study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())


def measure(db: Path, n_trials: int) -> list:
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.analysis import param_importance
    from lpstudy.results.answers.search import search_effect
    from lpstudy.results.curve_sample import importance_sample
    from lpstudy.results.frames import load_study
    from benchmarks.scale_study import write_scale_study

    url = f"sqlite:///{db}"
    if not db.exists():
        print(f"writing {n_trials:,} trials to {db} ...", file=sys.stderr, flush=True)
        write_scale_study(url, STUDY, n_trials, n_evals=20, seed=0)
    data, read_s, read_cpu = timed(lambda: load_study(open_reader(url), STUDY, curves=False))
    _, before_s, before_cpu = timed(lambda: ped_anova(data.trials, data.info.spec))
    answer, surrogate_s, surrogate_cpu = timed(lambda: search_effect(data))
    _, importance_s, importance_cpu = timed(lambda: param_importance(importance_sample(data.trials), data.info.spec))
    ratio = (surrogate_cpu + importance_cpu) / (read_cpu + before_cpu)
    return [f"{len(data.trials):,}", f"{read_s:.2f} / {read_cpu:.2f}", f"{before_s:.2f} / {before_cpu:.2f}",
            f"{surrogate_s:.2f} / {surrogate_cpu:.2f}", f"{importance_s:.2f} / {importance_cpu:.2f}",
            f"{ratio:.2f}", answer["sentence"][:60] + "…"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,10000", help="trials per study, comma-separated")
    parser.add_argument("--db-dir", type=Path, default=Path("/tmp/lpstudy-bench-search"),
                        help="where the studies are written (reused when there)")
    add_result_argument(parser, "search_answer")
    args = parser.parse_args(argv)
    load = load_average()
    args.db_dir.mkdir(parents=True, exist_ok=True)
    rows = [["trials", "read (wall / CPU s)", "PED-ANOVA, before (s)", "surrogate profile (s)",
             "type II importance (s)", "new / before (CPU)", "sentence"]]
    for size in (int(s) for s in args.sizes.split(",")):
        rows.append(measure(args.db_dir / f"search-{size}.db", size))
        print(" | ".join(rows[-1]), flush=True)
    write_result(args.result, None, rows, title="What p's answer costs the Effect of p page", load_at_start=load,
                 notes="Wall and CPU seconds in one process, one size after the other. The surrogate fits at most "
                       "250 runs and the importance at most 2,000, so both stay flat above those sizes.")


if __name__ == "__main__":
    main()
