"""How the spread of fold differences falls with training seeds per fold, at the smoke preset.

Real runs: p = 1, 2 and 4 with the temperature-matched gain (`gain_init: matched`, where the arms end
close together), K folds, seeds 0 .. S − 1 in every fold. For each arm a against the reference p = 2 and
each fold f, the difference d(f, s) = loss(a, f, s) − loss(2, f, s) of two runs on the same fold and
seed. Averaging m seeds per fold gives d̄(f, m); its spread over the folds is what the verdicts' interval
is made of. The spread is split into its two parts (a one-way random-effects decomposition, folds as
groups, seeds as replicates: Searle, Casella and McCulloch, "Variance Components", 1992, ch. 3):

    Var d̄(f, m) = σ²_fold + σ²_seed / m

σ²_seed (training noise: the same fold trained again with another seed) is the within-fold variance of
d; σ²_fold (what the partition itself does to the difference) is what is left of the spread of d̄(f, S).
Seeds per fold average only σ²_seed away. From the two parts the table shows, for m = 1 .. --max-seeds,
the spread (measured where m ≤ S: the mean over every choice of m of the S seeds; predicted past it),
the half-width of the corrected resampled t interval at K folds (Nadeau and Bengio 2003, ρ = 1/K) and
whether a ROPE of --rope nats could then hold an interval centred at 0 (equivalence reachable), with the
runs and the CPU time (lpstudy.training.costs) that many seeds cost for three arms.

    nice -n 10 python benchmarks/bench_seeds.py                     # 90 runs, about 6 min of CPU
    python benchmarks/bench_seeds.py --folds 4 --seeds 2 --result none

The per-run losses go to benchmarks/results/seeds.csv beside the table (benchmarks/results/seeds.md).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import RESULTS, add_result_argument, load_average, write_result  # noqa: E402

if TYPE_CHECKING:  # pandas is imported where a run needs it, not for --help
    import pandas as pd

ARMS = (1.0, 4.0)
REFERENCE = 2.0


def run_grid(folds: int, seeds: int, preset: str) -> pd.DataFrame:
    """One real training run per (p, fold, seed); seed-major, so a run cut short still has whole seeds."""
    import pandas as pd

    from lpstudy.training.config import resolve_config, with_cpu_threads
    from lpstudy.training.data import load_corpus
    from lpstudy.training.trainer import train

    corpus = load_corpus()
    rows = []
    cells = [(s, f, p) for s in range(seeds) for f in range(folds) for p in (REFERENCE, *ARMS)]
    started = time.perf_counter()
    for i, (seed, fold, p) in enumerate(cells, 1):
        cfg = with_cpu_threads(resolve_config(preset, {"p": p, "gain_init": "matched", "fold": fold,
                                                       "folds": folds, "seed": seed}), "cpu")
        summary = train(cfg, corpus).summary
        rows.append({"p": p, "fold": fold, "seed": seed, "loss": summary.final_val_loss,
                     "seconds": summary.wall_time_s})
        print(f"[{i}/{len(cells)}] p={p:g} fold={fold} seed={seed} loss={summary.final_val_loss:.4f} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def corrected_half_width(sd: float, k: int, confidence: float = 0.90) -> float:
    """The half-width of the corrected resampled t interval over k fold differences of this spread
    (Nadeau and Bengio 2003, ρ = 1/k: variance sd²·(1/k + ρ/(1 − ρ)), t with k − 1 degrees of freedom).
    0.90: the interval two one-sided tests at 5 % decide equivalence with (Schuirmann 1987)."""
    from scipy import stats

    rho = 1.0 / k
    return float(stats.t.ppf(0.5 + confidence / 2, k - 1) * sd * math.sqrt(1.0 / k + rho / (1.0 - rho)))


def spread_with_seeds(diffs: pd.DataFrame, m: int) -> float:
    """The SD over folds of the per-fold mean of m seeds' differences, averaged over every choice of m
    of the seeds run (diffs: folds × seeds)."""
    seeds = list(diffs.columns)
    values = [float(diffs[list(chosen)].mean(axis=1).std(ddof=1)) for chosen in itertools.combinations(seeds, m)]
    return sum(values) / len(values)


def components(diffs: pd.DataFrame) -> tuple[float, float]:
    """(σ_fold, σ_seed) of the fold × seed differences, by the one-way random-effects ANOVA estimator
    (σ²_fold clipped at 0: a variance)."""
    s = diffs.shape[1]
    within = float(diffs.var(axis=1, ddof=1).mean())  # σ²_seed
    between = float(diffs.mean(axis=1).var(ddof=1))  # σ²_fold + σ²_seed / s
    return math.sqrt(max(between - within / s, 0.0)), math.sqrt(within)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3, help="seeds run in every fold")
    parser.add_argument("--max-seeds", type=int, default=8, help="seeds per fold the table predicts up to")
    parser.add_argument("--preset", default="smoke")
    parser.add_argument("--rope", type=float, default=0.01, help="the ROPE in nats the last columns test")
    parser.add_argument("--from-csv", type=Path, help="re-analyse the runs of an earlier run's CSV")
    add_result_argument(parser, "seeds")
    args = parser.parse_args(argv)
    import pandas as pd

    from lpstudy.training.costs import trial_seconds

    load_at_start = load_average()
    runs = pd.read_csv(args.from_csv) if args.from_csv else run_grid(args.folds, args.seeds, args.preset)
    if args.result != "none" and not args.from_csv:
        runs.to_csv(RESULTS / f"{args.result}.csv", index=False)
    folds, seeds = runs["fold"].nunique(), runs["seed"].nunique()
    table = runs.set_index(["p", "fold", "seed"])["loss"]
    per_run = trial_seconds(args.preset) or math.nan
    rows: list[list[object]] = [["arm", "seeds per fold", "runs (3 arms)", "CPU time", "spread of fold differences (nats)",
             "measured or predicted", "corrected 90 % half-width (nats)", f"inside ±{args.rope:g} nats"]]
    parts = []
    for arm in ARMS:
        diffs = (table.loc[arm] - table.loc[REFERENCE]).unstack("seed")
        sigma_fold, sigma_seed = components(diffs)
        pairs = [float(diffs[a].corr(diffs[b])) for a, b in itertools.combinations(diffs.columns, 2)]
        parts.append([f"p = {arm:g}", f"{sigma_fold:.4f}", f"{sigma_seed:.4f}", f"{diffs.stack().mean():+.4f}",
                      f"{sum(pairs) / len(pairs):+.2f}" if pairs else "–"])
        for m in range(1, args.max_seeds + 1):
            measured = m <= seeds
            sd = spread_with_seeds(diffs, m) if measured else math.sqrt(sigma_fold ** 2 + sigma_seed ** 2 / m)
            half = corrected_half_width(sd, folds)
            n_runs = 3 * folds * m
            rows.append([f"p = {arm:g} vs 2", m, n_runs, f"{n_runs * per_run / 60:.0f} min",
                         f"{sd:.4f}", "measured" if measured else "predicted", f"{half:.4f}",
                         "yes" if half < args.rope else "no"])
    notes = (f"{len(runs)} real runs at the `{args.preset}` preset (gain_init matched), K = {folds} folds, "
             f"seeds 0 .. {seeds - 1} in every fold; the difference is the arm's final validation loss minus "
             f"p = 2's on the same fold and seed. CPU time: runs × lpstudy.training.costs.trial_seconds "
             f"('{args.preset}', {per_run:.1f} s a run), one worker. \"inside\": the corrected 90 % interval "
             f"at K = {folds} is narrower than the ROPE, so an arm equal to the reference could be called "
             "equivalent; a wider one leaves every such arm undecided however the folds fall.")
    more = [("The two parts of the spread (one-way random-effects ANOVA over folds × seeds): σ_fold, what "
             "the partition does to the difference, is not averaged away by seeds; σ_seed, training noise, "
             "falls as 1/√m. Mean: the mean difference over every run; seed-to-seed correlation: of a fold's "
             "difference between two seeds, averaged over the pairs of seeds (near 0: the fold's difference is mostly noise).",
             [["arm", "σ_fold (nats)", "σ_seed (nats)", "mean difference", "seed-to-seed correlation"], *parts])]
    write_result(args.result, None, rows, notes, title="Fold differences against seeds per fold",
                 more_tables=more, load_at_start=load_at_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
