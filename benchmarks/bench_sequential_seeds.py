"""The sequential design over seeds (`replicate --until-decided --seeds S`) against the fixed design of
the same maximum size (`replicate --folds K --seeds S`), on planted studies at the noise real studies
show: what each decides and what it spends.

Each row plants 10,000 studies (--studies) of one arm against the reference, K folds × S seeds, the
per-run difference made of the partition's part (σ_fold, correlated across the folds of one CV at
ρ = 1/K, the correction's model, and shared by a fold's seeds) and the training seed's (σ_seed,
independent run to run): the model and components of benchmarks/bench_seed_verdicts.py
(benchmarks/results/seeds.md measured σ_seed ≈ 0.024 and σ_fold ≈ 0.004–0.010 nats at the smoke
preset). The sequential design is read by the engine's own stages (sequential.sequential_verdicts:
the folds in stages of rounds_of(K), each fold with its S seeds, Lan–DeMets O'Brien–Fleming-type
spending at the information fraction n/K), the fixed one by fold_tests.fold_verdicts on every run.
Columns: no effect: false "better"/"worse" and "equivalent" (the TOST's power); a difference at the
ROPE's edge: false "worse" (the beyond-the-ROPE test's own null, its hardest case: at most 5 %); a
0.02-nat effect: "worse" (power); the runs per arm each spends, mean over the studies
(no effect / 0.02 nats). Rates with Wilson 95 % intervals.

    nice python benchmarks/bench_sequential_seeds.py   # writes benchmarks/results/sequential-seeds.md
    nice python benchmarks/bench_sequential_seeds.py --finding sqlite:////tmp/seq.db  # and the real study's section
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_seed_verdicts import planted, rate  # noqa: E402
from results_file import add_result_argument, load_average, write_result  # noqa: E402

COMPONENTS = ((0.005, 0.024), (0.010, 0.024))
DESIGNS = ((10, 4), (48, 4))  # (K, S): the smoke preset's 10 × 4, and the 48 × 4 the verdicts proposed there
ROPES = (("±0.01 nats", 0.01), ("±0.5 % (0.0139 nats)", 0.0139))  # 0.5 % of the smoke preset's 2.78-nat loss
EFFECT = 0.02


def rows(studies: int) -> list[list]:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts
    from lpstudy.results.answers.sequential import rounds_of, sequential_verdicts

    better, worse, equivalent = (VERDICTS.index(v) for v in ("better", "worse", "equivalent"))
    out = [["σ_fold / σ_seed (nats)", "K × S (max runs per arm)", "stages (folds)", "ROPE", "design",
            "no effect: false better/worse", "no effect: equivalent", "at the ROPE's edge: false worse",
            f"{EFFECT} nats: worse (power)",
            "runs per arm (no effect / effect)"]]
    for sigma_fold, sigma_seed in COMPONENTS:
        for k, seeds in DESIGNS:
            rng = np.random.default_rng(int(1e4 * sigma_fold) * 1000 + k * 10 + seeds)
            folds = np.repeat(np.arange(k), seeds)
            null = planted(rng, studies, k, seeds, sigma_fold, sigma_seed)[:, None, :]
            rounds = rounds_of(k)
            label = f"{sigma_fold:g} / {sigma_seed:g}"
            for name, margin in ROPES:
                shifts = (0.0, EFFECT, margin)
                seq = [sequential_verdicts(null + shift, k, margin, 0.05, rounds, folds=folds) for shift in shifts]
                fixed = [fold_verdicts(null + shift, k, margin, cells=folds)["verdict"][:, 0] for shift in shifts]
                spent = [float(np.mean(s["folds_used"][:, 0])) * seeds for s in seq]
                common = [label, f"{k} × {seeds} ({k * seeds})", ", ".join(map(str, rounds)), name]
                out.append([*common, "sequential", rate(np.isin(seq[0]["verdict"][:, 0], [better, worse])),
                            rate(seq[0]["verdict"][:, 0] == equivalent), rate(seq[2]["verdict"][:, 0] == worse),
                            rate(seq[1]["verdict"][:, 0] == worse),
                            f"{spent[0]:.0f} / {spent[1]:.0f}"])
                out.append([*common, "fixed", rate(np.isin(fixed[0], [better, worse])), rate(fixed[0] == equivalent),
                            rate(fixed[2] == worse), rate(fixed[1] == worse), f"{k * seeds} / {k * seeds}"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=10000, help="planted studies per row (default 10000)")
    add_result_argument(parser, "sequential-seeds")
    args = parser.parse_args()
    load = load_average()
    table = rows(args.studies)
    for row in table:
        print(" | ".join(map(str, row)))
    write_result(args.result, None, table,
                 title="The sequential design over seeds against the fixed design of the same size, on planted studies",
                 notes=(f"{args.studies:,} planted studies per row: one arm against the reference, K folds × S seeds, "
                        "the partition's part correlated at ρ = 1/K and shared by a fold's seeds, the seeds' part "
                        "independent. Sequential: `replicate --until-decided --seeds S --max-folds K` as the engine "
                        "reads it (each stage's folds with their S seeds; boundaries at the information fraction n/K, "
                        "its lower bound, so conservative whatever the components); fixed: `replicate --folds K "
                        "--seeds S`, every run at once. One arm, alpha 0.05; Wilson 95 % intervals; runs per arm "
                        "the mean over the studies (the reference runs as many as its longest arm)."),
                 load_at_start=load)


if __name__ == "__main__":
    main()
