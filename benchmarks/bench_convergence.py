"""What convergence as an answer (lpstudy.results.answers.convergence) costs at 100,000 trials, and
how often it calls a difference where there is none.

1. Cost: a 100,000-trial frame (7 p × 10 folds × 1,429 learning rates) with 50 evaluations per run
   (5 million curve rows; per p its own time scale, 2 % of the runs pruned at a random step, 1 %
   diverged), timed in one run: the two endpoints of every run over the whole curves table
   (run_endpoints), beside the per-trial loop it replaced (the area under the curve of main's
   analysis/convergence.py, on a 2,000-run slice, scaled); Kaplan–Meier and the restricted mean per p
   over every run (group_survival); and what the Convergence page adds to its first draw on a big
   study: the Kaplan–Meier chart per p group over the curve sample the page reads
   (lpstudy.results.analysis.curve_sample), built as the page builds it.
2. False verdicts: --studies planted replicate studies of 4 arms that converge alike (their folds
   correlated ρ = 1/K, tests/test_convergence_verdicts.planted_study), through study_answer: the
   share with any arm said to reach the threshold sooner or later (better, worse, or a difference
   of undecided size), beside the same studies without the K-fold correction.

    python benchmarks/bench_convergence.py              # writes benchmarks/results/convergence.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

EVALS = 50
MAX_STEPS = 2000


def big_study():
    """The 100,000-trial trials and curves frames (see the module's docstring)."""
    rng = np.random.default_rng(0)
    ps, folds, lrs = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], 10, 1429
    p, fold, lr = (a.ravel() for a in np.meshgrid(ps, range(folds), np.geomspace(1e-4, 1e-2, lrs), indexing="ij"))
    n = len(p)
    tau = 300 * (1 + 0.05 * (2 - p)) * np.exp(rng.normal(0, 0.1, n))
    steps = np.linspace(0, MAX_STEPS, EVALS)
    loss = 1.5 + 2.67 * np.exp(-steps[None, :] / tau[:, None]) + rng.normal(0, 0.005, (n, EVALS))
    pruned = rng.random(n) < 0.02
    diverged = ~pruned & (rng.random(n) < 0.01)
    last = np.where(pruned | diverged, rng.integers(2, EVALS, n), EVALS)
    keep = np.arange(EVALS)[None, :] < last[:, None]
    trial_id = np.arange(n) + 1
    value = np.where(diverged, 4.17, loss[np.arange(n), last - 1])
    trials = pd.DataFrame({"number": trial_id - 1, "trial_id": trial_id, "p": p, "fold": fold.astype(float),
                           "folds": float(folds), "lr": lr, "gain_init": 12.0, "max_steps": MAX_STEPS,
                           "state": np.where(pruned, "PRUNED", "COMPLETE"), "diverged": diverged, "value": value,
                           "final_val_loss": value})
    rows = np.nonzero(keep)
    curves = pd.DataFrame({"trial_id": trial_id[rows[0]], "trial_number": trial_id[rows[0]] - 1,
                           "step": steps[rows[1]], "val_loss": loss[rows], "elapsed_s": steps[rows[1]] / 50})
    return trials, curves


def _median_time(run, repeats: int) -> float:
    run()  # imports and caches out of the timing
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def _before_auc():
    """main's per-trial area under the curve (git show main:...), the loop run_endpoints replaced."""
    import subprocess

    text = subprocess.run(["git", "show", "main:lpstudy/results/analysis/convergence.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    space: dict = {}
    exec(compile(text, "main:convergence.py", "exec"), space)  # noqa: S102 - the repository's own code
    return space["area_under_curve"]


def cost_rows(repeats: int) -> list[list]:
    from lpstudy.results import analysis as A
    from lpstudy.results.analysis.survival import group_survival
    from lpstudy.results.analysis.curve_sample import curve_sample
    from lpstudy.results.reading.frames import StudyData, StudyInfo
    from lpstudy.results.pages import PageInputs, CONVERGENCE, figure

    trials, curves = big_study()
    threshold = A.default_threshold(trials, "p")
    ends = A.run_endpoints(curves, trials, threshold, MAX_STEPS)
    groups = trials.set_index("trial_id")["p"]
    sample = curve_sample(trials)
    # None: the study is small enough that the page reads every curve
    sampled = curves if sample.trial_ids is None else curves[curves["trial_id"].isin(set(sample.trial_ids))]
    sampled_runs = trials["trial_id"].nunique() if sample.trial_ids is None else len(sample.trial_ids)
    data = StudyData(name="scale", info=StudyInfo(name="scale", kind="search"), trials=trials, curves=sampled,
                     curve_note=sample.note)
    reach = next(c for c in CONVERGENCE if c.name == "reach")
    before = _before_auc()
    slice_ = curves[curves["trial_id"] <= 2000]
    timings = {
        "the two endpoints of every run (run_endpoints)": _median_time(
            lambda: A.run_endpoints(curves, trials, threshold, MAX_STEPS), repeats),
        "Kaplan–Meier and restricted mean per p, every run (group_survival)": _median_time(
            lambda: group_survival(ends, groups, MAX_STEPS), repeats),
        f"the page's Kaplan–Meier chart over the curve sample ({sampled_runs:,} runs)": _median_time(
            lambda: figure(reach, PageInputs(data, bins=A.default_p_groups(trials, None))), repeats),
        "before: main's area under the curve, per-trial loop (2,000 runs × 50)": _median_time(
            lambda: before(slice_), 1),
        "after: run_endpoints on the same 2,000 runs": _median_time(
            lambda: A.run_endpoints(slice_, trials[trials["trial_id"] <= 2000], threshold, MAX_STEPS), repeats),
    }
    return [["computation", "runs", "curve rows", "median s"],
            *[[name, "2,000" if "2,000" in name else f"{len(trials):,}",
               f"{len(slice_):,}" if "2,000" in name else f"{len(curves):,}", f"{s:.3f}"] for name, s in timings.items()]]


def false_rows(n: int) -> list[list]:
    from contextlib import nullcontext
    from unittest import mock

    import lpstudy.results.answers.endpoint_verdicts as E
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.fold_tests import FoldTests
    from lpstudy.results.answers.fold_tests import fold_verdicts as real
    from tests.test_convergence_verdicts import planted_study, says_sooner_or_later

    def uncorrected(diffs, k: int, margin, alpha: float = 0.05, rho=None, cells=None) -> FoldTests:
        """The engine's tests with the folds read as independent (ρ = 0), whatever it asks."""
        return real(diffs, k, margin, alpha, rho=0.0, cells=cells)

    rows: list[list[object]] = [["test", "studies", "any arm said sooner or later (no effect)"]]
    for name, rho in (("corrected for K-fold CV (the engine's, ρ = 1/K)", None),
                      ("uncorrected (ρ = 0: the plain paired t)", 0.0)):
        wrong = 0
        # the engine's own tests, or the uncorrected ones swapped in where it reads them (its module's name)
        with nullcontext() if rho is None else mock.patch.object(E, "fold_verdicts", uncorrected):
            for seed in range(n):
                answer = study_answer(planted_study({2.0: 1.0, 1.0: 1.0, 3.0: 1.0, 4.0: 1.0}, seed=seed, jitter=0.1,
                                                    shared=True))
                wrong += any(says_sooner_or_later(a) for a in answer.to_json()["convergence"]["arms"]
                             if a["endpoint"] == "steps_to_threshold")
        rows.append([name, n, f"{wrong / n:.3f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="timings per computation (median)")
    parser.add_argument("--studies", type=int, default=150, help="planted studies for the false-verdict rate")
    add_result_argument(parser, "convergence")
    args = parser.parse_args()
    load = load_average()
    cost = cost_rows(args.repeats)
    for row in cost:
        print(" | ".join(map(str, row)))
    false = false_rows(args.studies)
    for row in false:
        print(" | ".join(map(str, row)))
    write_result(args.result, None, cost, title="Convergence as an answer: its cost at 100,000 trials, its false verdicts",
                 load_at_start=load,
                 notes=("Medians of the repeats (the loop before: one run). The page reads the curves of a sample "
                        "of a big study (up to 50 runs per p group): its Kaplan–Meier chart is what the "
                        "Convergence page adds to its first draw, against the 4 s budget; the endpoints of every "
                        "run are what `lpstudy verdict` computes on a study that size."),
                 more_tables=[("Planted replicate studies, 4 arms × 10 folds converging alike, each run's time scale "
                               "jittered 10 % with a share 1/K shared by the arm's folds; alpha 0.05, Holm across "
                               "the 3 arms. A 5 % rate over these studies has a Monte Carlo error of about ±1.8 "
                               "points (one standard error).", false)])


if __name__ == "__main__":
    main()
