"""How often a comparison's verdict calls a difference that is the luck of its tuning: planted
comparisons of two arms with no true effect (and with a 0.02-nat effect, for power), each arm's chosen
configuration off its arm's true loss by a draw of the tuning's luck (sigma_tune), measured on K
folds (a partition part shared by the tunings, correlated at 1/K, sigma_fold; training noise
sigma_seed). Read with the engine's own tests (lpstudy.results.answers.fold_tests.fold_verdicts):
T = 1, the corrected fold interval (`compare` without --tunings); T >= 2, the t over the tunings'
mean differences (`compare --tunings T`, endpoint_verdicts.tuning_means). Rates with Wilson intervals.

    python benchmarks/bench_compare_tunings.py                 # 10,000 studies a row, about a minute
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from statsmodels.stats.proportion import proportion_confint

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, markdown_table, write_result  # noqa: E402
from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts  # noqa: E402

K, SIGMA_FOLD, SIGMA_SEED, ROPE = 5, 0.010, 0.024, 0.01  # nats; the seeds' and folds' share: seeds.md


def planted(rng, studies: int, tunings: int, sigma_tune: float, effect: float) -> np.ndarray:
    """Per study, tuning and fold (shape (studies, tunings, K)): loss(arm) − loss(reference)."""
    rho = 1.0 / K
    shared = rng.standard_normal((studies, 1, 1))
    partition = SIGMA_FOLD * (np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.standard_normal((studies, 1, K)))
    luck = sigma_tune * (rng.standard_normal((studies, tunings, 1)) - rng.standard_normal((studies, tunings, 1)))
    seeds = SIGMA_SEED * rng.standard_normal((studies, tunings, K))
    return effect + luck + partition + seeds  # the partition the same K folds for every tuning


def verdicts(diffs: np.ndarray) -> np.ndarray:
    studies, tunings, _ = diffs.shape
    if tunings == 1:
        return fold_verdicts(diffs[:, 0][:, None], K, ROPE).verdict[:, 0]
    return fold_verdicts(diffs.mean(axis=-1)[:, None], K, ROPE, rho=0.0).verdict[:, 0]


def rate(hits: int, n: int) -> str:
    low, high = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return f"{100 * hits / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=10_000)
    add_result_argument(parser, "compare-tunings")
    args = parser.parse_args()
    load = load_average()
    rng = np.random.default_rng(52)
    decided = [VERDICTS.index("better"), VERDICTS.index("worse")]
    rows: list[list[object]] = [["sigma_tune (nats)", "T", "runs per arm", "false better/worse, no effect (%)",
             "worse at +0.02 nats (%)"]]
    for sigma_tune in (0.0, 0.01, 0.03, 0.1):
        for tunings in (1, 3, 5):
            null = verdicts(planted(rng, args.studies, tunings, sigma_tune, 0.0))
            real = verdicts(planted(rng, args.studies, tunings, sigma_tune, 0.02))
            rows.append([f"{sigma_tune:g}", tunings, tunings * K, rate(int(np.isin(null, decided).sum()), args.studies),
                         rate(int((real == VERDICTS.index("worse")).sum()), args.studies)])
    notes = (f"{args.studies:,} planted comparisons a row, two arms, K = {K}, one seed a fold, sigma_fold = "
             f"{SIGMA_FOLD} (correlated at 1/K and the same folds for every tuning), sigma_seed = {SIGMA_SEED}, "
             f"ROPE ±{ROPE} nats, alpha 0.05. sigma_tune: the spread of a tuned arm's chosen configuration around "
             "its arm's true loss, drawn for each arm and tuning. T = 1 is `compare` without --tunings (the "
             "corrected fold interval); T >= 2 the t over the tunings' mean differences. Percentages with 95 % "
             "Wilson intervals.")
    print(markdown_table(rows))
    write_result(args.result, None, rows, notes, title="A comparison's verdict and the luck of its tuning",
                 load_at_start=load)


if __name__ == "__main__":
    main()
