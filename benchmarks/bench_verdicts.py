"""What the verdicts (lpstudy.results.answers) get right, by simulation, and what they cost at scale.

1. Fixed K: planted fold differences with the correlation shared training gives K-fold CV
   (ρ = 1/K, lpstudy.results.answers.sequential.planted_differences), --studies simulated studies
   per row: the share of wrong "better/worse" verdicts under no effect (per arm, and any of 3 arms),
   "equivalent" with no effect and "better/worse" with an effect of 2 ROPEs, beside the plain paired
   t-test on the same studies.
2. Until decided: the same planted studies run round by round (3, 5, 8, 10 folds of K = 10) with
   O'Brien–Fleming alpha spending: wrong verdicts over all looks and the folds each arm used.
3. The verdicts of a 100,000-trial replicate study (a synthetic trials frame: 7 p × 10 folds ×
   1,429 learning rates), timed beside the per-p table the page draws with it, in one run (the plain paired table it
   replaced is gone: every comparison of arms is the verdicts').

    python benchmarks/bench_verdicts.py                 # writes benchmarks/results/verdicts.md
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_file import add_result_argument, load_average, write_result  # noqa: E402

ROPE = 2.0  # in standard deviations of one fold's difference


def fixed_rows(n: int) -> list[list]:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts, paired_t_verdicts
    from lpstudy.results.answers.sequential import planted_differences

    better, worse, equivalent = (VERDICTS.index(v) for v in ("better", "worse", "equivalent"))
    rows = [["K", "arms", "true effect (ROPEs)", "verdict measured", "corrected t, TOST, Holm", "plain paired t"]]
    for k in (3, 5, 10):
        d = planted_differences(k, [0.0], n, seed=k)
        v = fold_verdicts(d, k, ROPE)["verdict"]
        rows.append([k, 1, 0, "false better/worse", f"{np.isin(v, [better, worse]).mean():.3f}",
                     f"{paired_t_verdicts(d).mean():.3f}"])
        d = planted_differences(k, [0.0] * 3, n, seed=10 + k)
        v = fold_verdicts(d, k, ROPE)["verdict"]
        rows.append([k, 3, 0, "any false better/worse", f"{np.isin(v, [better, worse]).any(axis=-1).mean():.3f}",
                     f"{paired_t_verdicts(d).any(axis=-1).mean():.3f}"])
    for k in (5, 10):
        v = fold_verdicts(planted_differences(k, [0.0], n, seed=20 + k), k, ROPE)["verdict"]
        rows.append([k, 1, 0, "equivalent", f"{(v == equivalent).mean():.3f}", "–"])
        d = planted_differences(k, [2 * ROPE], n, seed=30 + k)
        v = fold_verdicts(d, k, ROPE)["verdict"]
        rows.append([k, 1, 2, "better/worse", f"{np.isin(v, [better, worse]).mean():.3f}", f"{paired_t_verdicts(d).mean():.3f}"])
    return rows


def sequential_rows(n: int, k: int = 10) -> list[list]:
    from lpstudy.results.answers.fold_tests import VERDICTS
    from lpstudy.results.answers.sequential import rounds_of, simulate

    better, worse, equivalent = (VERDICTS.index(v) for v in ("better", "worse", "equivalent"))
    rows = [["true effect (ROPEs)", "arms", "wrong better/worse (any arm)", "equivalent", "better/worse",
             "undecided", "mean folds per arm", f"fold runs saved vs {k}"]]
    for effect in (0.0, 0.5, 1.0, 2.0, 3.0):
        s = simulate(k, [effect * ROPE] * 3, n, margin=ROPE, seed=int(100 * effect) + 1)
        v = s["verdict"]
        wrong = (np.isin(v, [better, worse]) if effect == 0 else
                 (v == better) if effect > 0 else (v == worse)).any(axis=-1).mean()
        folds = s["folds_used"].mean()
        rows.append([effect, 3, f"{wrong:.3f}", f"{(v == equivalent).mean():.3f}",
                     f"{np.isin(v, [better, worse]).mean():.3f}", f"{(v == VERDICTS.index('undecided')).mean():.3f}",
                     f"{folds:.2f}", f"{100 * (1 - folds / k):.0f} %"])
    return rows, rounds_of(k)


def scale_rows(repeats: int) -> list[list]:
    from lpstudy.results import analysis as A
    from lpstudy.results.answers import study_answer
    from lpstudy.results.frames import StudyData, StudyInfo

    rng = np.random.default_rng(0)
    ps, folds, lrs = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], 10, 1429
    p, fold, lr = (a.ravel() for a in np.meshgrid(ps, range(folds), np.geomspace(1e-4, 1e-2, lrs), indexing="ij"))
    loss = 2.8 + 0.01 * (p - 2) + rng.normal(0, 0.02, len(p))
    trials = pd.DataFrame({"number": np.arange(len(p)), "trial_id": np.arange(len(p)) + 1, "state": "COMPLETE",
                           "value": loss, "final_val_loss": loss, "p": p, "fold": fold.astype(float), "folds": float(folds),
                           "lr": lr, "diverged": rng.random(len(p)) < 0.01})
    data = StudyData(name="scale", info=StudyInfo(name="scale", kind="replicate"), trials=trials, curves=pd.DataFrame())
    timings = {}
    for name, run in (("verdicts (study_answer)", lambda: study_answer(data)),
                      ("per-p table beside it (per_p_summary)", lambda: A.per_p_summary(trials))):
        run()  # imports and caches out of the timing
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
        timings[name] = statistics.median(seconds)
    base = timings["per-p table beside it (per_p_summary)"]
    return [["computation", "trials", "median s", "× the per-p table"],
            *[[name, f"{len(trials):,}", f"{s:.3f}", f"{s / base:.1f}"] for name, s in timings.items()]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=10000, help="simulated studies per row (default 10000)")
    parser.add_argument("--repeats", type=int, default=5, help="timings of the 100,000-trial verdicts (median)")
    add_result_argument(parser, "verdicts")
    args = parser.parse_args()
    load = load_average()
    fixed = fixed_rows(args.studies)
    sequential, rounds = sequential_rows(args.studies)
    scale = scale_rows(args.repeats)
    for rows in (fixed, sequential, scale):
        for row in rows:
            print(" | ".join(map(str, row)))
    write_result(args.result, None, fixed, title="Verdicts: error rates by simulation, and their cost at 100,000 trials",
                 notes=(f"{args.studies:,} simulated studies per row; fold differences with standard deviation 1, "
                        f"correlated ρ = 1/K as K-fold CV's shared training makes them; ROPE ±{ROPE:g} (so an effect "
                        "of 2 ROPEs is 4 standard deviations); alpha 0.05. Monte Carlo error of a 5 % rate: ±0.2 "
                        "points (one standard error)."),
                 more_tables=[(f"Until decided (K = 10, stages of {', '.join(map(str, rounds))}, O'Brien–Fleming alpha "
                               "spending, Holm across 3 arms at each look): wrong = any arm called better/worse "
                               "against its true sign (no effect: either); folds per arm averaged over arms and studies.",
                               sequential),
                              ("The verdicts of a 100,000-trial replicate frame (7 p × 10 folds × 1,429 learning rates, "
                               "1 % diverged), the page's computation, beside the per-p table drawn with it; medians of "
                               f"{args.repeats} runs after one warm-up. The page's budget at 100,000 trials "
                               "(docs/scale-reading.md): a first view within 4 s.", scale)],
                 load_at_start=load)


if __name__ == "__main__":
    main()
