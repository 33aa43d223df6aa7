"""What the verdicts (lpstudy.results.answers) get right, by simulation at the noise real studies
show, on the cases the method's own model leaves out (issue 44), and what they cost at scale.

The noise: on a real smoke-preset replicate (matched gain, p = 1–4, 10 folds) the fold differences
spread about 0.035 nats (--sd); the ROPE is the default 0.01 nats (--rope); effects are in nats.
Every rate comes with its Wilson 95 % interval over --studies planted studies.

1. Fold correlation ρ = 0.5 instead of the 1/K the correction assumes (K = 5, 10), no effect: false
   better/worse, those of them that claim to hold at ρ = 0.5 (holds_up_to_rho), and 4 repeats of
   the CV over new partitions (Bouckaert & Frank's corrected repeated test).
2. A plain K = 10 study read after each fold: any false verdict over the reads when each read is a
   verdict at full alpha (what the old reading did) against the interim reading (a verdict at K only).
3. Failed runs: p = 4 equal to the reference on 2 folds and diverged (or FAIL) on 3 of 5: how often
   "equivalent or better" is said from the 2 pairs alone (the old reading) and by the engine.
4. A COMPLETE trial with an infinite loss: whether study_answer gives a verdict.
5. The sequential design (--until-decided, stages 3, 5, 8, 10) against running all 10 folds once,
   at the real spread and at a spread of one ROPE: error (any of 3 arms), decisions, fold runs saved.
6. The verdicts of a 100,000-trial replicate study, timed beside the per-p table the page draws with it, in one run.

    nice python benchmarks/bench_verdicts.py          # writes benchmarks/results/verdicts.md
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402


def rate(hits) -> str:
    """A rate with its Wilson 95 % interval."""
    from lpstudy.results.analysis.intervals import wilson_interval

    hits = np.asarray(hits, dtype=bool).ravel()
    low, high = wilson_interval(int(hits.sum()), len(hits), 0.95)
    return f"{hits.mean():.3f} [{low:.3f}, {high:.3f}]"


def correlation_rows(n: int, sd: float, rope: float) -> list[list]:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts, holds_up_to_rho
    from lpstudy.results.answers.sequential import planted_differences

    wrong = [VERDICTS.index("better"), VERDICTS.index("worse")]
    rows: list[list[object]] = [["case", "K", "false better/worse", "… claiming to hold at ρ = 0.5", "a reviewer expects"]]
    for k in (5, 10):
        for rho, label in ((1.0 / k, "ρ = 1/K (the model)"), (0.5, "ρ = 0.5")):
            d = planted_differences(k, [0.0], n, sd=sd, seed=k + int(100 * rho), rho=rho)
            v = fold_verdicts(d, k, rope).verdict
            held = holds_up_to_rho(d, k, rope)
            rows.append([f"no effect, {label}, one CV", k, rate(np.isin(v, wrong)),
                         rate(np.isin(v, wrong) & (held >= 0.5)), "≤ 5 %, or a verdict that says how far it holds"])
        d = np.concatenate([planted_differences(k, [0.0], n, sd=sd, seed=1000 * k + r, rho=0.5) for r in range(4)], axis=-1)
        v = fold_verdicts(d, k, rope).verdict
        rows.append(["no effect, ρ = 0.5, 4 repeats (--repeats 4)", k, rate(np.isin(v, wrong)),
                     rate(np.isin(v, wrong) & (holds_up_to_rho(d, k, rope) >= 0.5)), "≤ 5 %"])
    return rows


def peeking_rows(n: int, sd: float, rope: float) -> list[list]:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts
    from lpstudy.results.answers.sequential import planted_differences

    wrong = [VERDICTS.index("better"), VERDICTS.index("worse")]
    d = planted_differences(10, [0.0], n, sd=sd, seed=77)
    reads = np.stack([np.isin(fold_verdicts(d[..., :m], 10, rope).verdict, wrong)[:, 0] for m in range(2, 11)])
    return [["no effect, K = 10, read after each fold", "any false better/worse over the reads", "a reviewer expects"],
            ["every read a verdict at full alpha (the old reading)", rate(reads.any(axis=0)), "≤ 5 %"],
            ["interim readings, a verdict at K only (now)", rate(reads[-1]), "≤ 5 %"]]


def failure_rows(n: int, sd: float, rope: float) -> list[list]:
    """p = 4 equal to the reference on 2 folds, failed on 3 of 5: the old reading tested the 2 pairs;
    the engine counts the failures (one study through study_answer per case, the rule checked)."""
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts
    from lpstudy.results.answers.sequential import planted_differences

    d = planted_differences(5, [0.0], n, sd=sd, seed=5, n_folds=2)
    v = fold_verdicts(d, 5, rope).verdict
    old = np.isin(v, [VERDICTS.index("better"), VERDICTS.index("equivalent")])
    rows = [["case", "equivalent or better said (old: the 2 pairs)", "engine (study_answer)", "stability counts"]]
    for how in ("diverged", "FAIL"):
        answer = _failed_answer(how)
        arm = answer["arms"][0]
        counted = {r["value"]: f"{r['diverged']}/{r['runs']}" for r in answer["stability"]["divergence"]}
        rows.append([f"p = 4 {how} on 3 of 5 folds, equal to p = 2 on 2", rate(old),
                     f"{arm['verdict']} ({arm['failed_runs']} failed runs named)", f"p = 4: {counted.get(4.0)}"])
    losses = {2.0: [2.80, 2.81, 2.79, 2.80], 1.0: [2.90, math.inf, 2.893, 2.905]}
    try:
        arm = _answer(_trials(losses))["arms"][0]
        said = f"a verdict: {arm['verdict']}, {arm['failed_runs']} failed run"
    except Exception as error:  # noqa: BLE001 - what the old code did is the measurement
        said = f"{type(error).__name__}"
    rows.append(["a COMPLETE trial whose loss is inf", "ValueError from the ANOVA (old)", said, "–"])
    return rows


def _trials(losses: dict, diverged=()) -> pd.DataFrame:
    rows: list[dict] = []
    for p, values in losses.items():
        for fold, loss in enumerate(values):
            rows.append({"number": len(rows), "trial_id": len(rows) + 1, "state": "COMPLETE", "value": loss, "p": p,
                         "fold": fold, "folds": len(values), "diverged": (p, fold) in diverged, "final_val_loss": loss})
    return pd.DataFrame(rows)


def _answer(trials: pd.DataFrame) -> dict:
    from lpstudy.results.answers import study_answer
    from lpstudy.results.reading.frames import StudyData, StudyInfo

    return study_answer(StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=trials,
                                  curves=pd.DataFrame())).to_json()  # the JSON `lpstudy verdict --json` gives


def _failed_answer(how: str) -> dict:
    losses = {2.0: [2.80, 2.81, 2.79, 2.80, 2.80], 4.0: [2.80, 2.81, 2.79, 2.80, 2.80]}
    trials = _trials(losses, diverged={(4.0, f) for f in (2, 3, 4)} if how == "diverged" else ())
    if how == "FAIL":
        lost = (trials["p"] == 4.0) & trials["fold"].isin([2, 3, 4])
        trials.loc[lost, ["state", "value", "final_val_loss"]] = ["FAIL", np.nan, np.nan]
    return _answer(trials)


def sequential_rows(n: int, sds: list[float], rope: float, k: int = 10) -> tuple[list[list], list[int]]:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts
    from lpstudy.results.answers.sequential import planted_differences, rounds_of, sequential_verdicts

    better, worse, undecided = (VERDICTS.index(v) for v in ("better", "worse", "undecided"))
    rounds = rounds_of(k)
    rows: list[list[object]] = [["fold spread (nats)", "true effect (nats)", "design", "wrong better/worse (any of 3 arms)",
             "decided (per arm)", "mean folds per arm", f"fold runs saved vs {k}"]]
    for sd, effect in [(sd, e) for sd in sds for e in (0.0, 0.01, 0.02, 0.05)]:
        d = planted_differences(k, [effect] * 3, n, sd=sd, seed=int(1000 * effect) + int(1000 * sd))
        seq = sequential_verdicts(d, k, rope, 0.05, rounds)
        fixed = fold_verdicts(d, k, rope).verdict
        for design, v, folds in (("sequential", seq.verdict, seq.folds_used.mean()), ("fixed", fixed, float(k))):
            wrong = np.isin(v, [better, worse]) if effect == 0 else (v == better)
            rows.append([sd, effect, design, rate(wrong.any(axis=-1)), rate(v != undecided), f"{folds:.2f}",
                         f"{100 * (1 - folds / k):.0f} %"])
    return rows, rounds


def scale_rows(repeats: int) -> list[list]:
    from lpstudy.results import analysis as A
    from lpstudy.results.answers import study_answer
    from lpstudy.results.reading.frames import StudyData, StudyInfo

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


def shared_repeats(k: int, repeats: int, n: int, rho: float, shared: float, effect: float, sd: float,
                   seed: int) -> np.ndarray:
    """(n, 1, R·K) fold differences of R repeated CVs whose folds correlate at rho within a CV, a
    share `shared` of that correlation common to every repeat (0: Bouckaert & Frank's independent
    repeats; 1: every repeat the same correlated draw)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(0.0, sd * math.sqrt(rho * shared), (n, 1, 1))
    own_repeat = rng.normal(0.0, sd * math.sqrt(rho * (1 - shared)), (n, repeats, 1))
    own = rng.normal(0.0, sd * math.sqrt(1 - rho), (n, repeats, k))
    return (effect + common + own_repeat + own).reshape(n, 1, repeats * k)


def repeat_rows(n: int, sd: float, rope: float) -> list[list]:
    """--repeats where the repeats share half the fold correlation: false better/worse at a true
    difference at the ROPE (+rope: "worse" is then false), and the power for a 0.02-nat effect."""
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts

    wrong = [VERDICTS.index("better"), VERDICTS.index("worse")]
    rows: list[list[object]] = [["K", "fold correlation ρ", "repeats R", "false better/worse at +ROPE", "power, 0.02-nat effect",
             "a reviewer expects"]]
    for k in (5, 10):
        for rho, label in ((1.0 / k, "1/K (the model)"), (0.5, "0.5")):
            for r in (1, 3, 5):
                at = shared_repeats(k, r, n, rho, 0.5, rope, sd, seed=1000 * k + 10 * r + int(100 * rho))
                hit = shared_repeats(k, r, n, rho, 0.5, 0.02, sd, seed=2000 * k + 10 * r + int(100 * rho))
                rows.append([k, label, r, rate(np.isin(fold_verdicts(at, k, rope).verdict, wrong)),
                             rate(fold_verdicts(hit, k, rope).verdict == VERDICTS.index("worse")),
                             "≤ 5 %; rising"])
    return rows


def interval_rows(n: int, sd: float, rope: float) -> list[list]:
    """Three arms (effects 0, ±1.5 ROPE, 3 ROPE) of K-fold studies: how often the printed interval and
    the verdict disagree (an interval wholly beyond the ROPE printed "undecided", or inside it and
    not "equivalent"), with the 1 − alpha interval (before) and the one the verdict used (now)."""
    from lpstudy.results.answers.fold_tests import (VERDICTS, beyond_p, equivalence_p, fold_verdicts, holm_levels,
                                                    interval)
    from lpstudy.results.answers.sequential import planted_differences

    rows: list[list[object]] = [["K", "arms disagreeing: 95 % interval (before)", "the verdict's interval (now)", "a reviewer expects"]]
    for k in (2, 3, 5, 10):
        d = planted_differences(k, [0.0, 1.5 * rope, 3 * rope], n, sd=sd / 3, seed=50 + k)
        t = fold_verdicts(d, k, rope)
        code = t.verdict
        beyond = 1 - holm_levels(beyond_p(t.mean, t.se, t.df, rope), 0.05)
        within = 1 - 2 * holm_levels(equivalence_p(t.mean, t.se, t.df, rope), 0.05)
        decided_beyond = np.isin(code, [VERDICTS.index("better"), VERDICTS.index("worse")])
        used = np.where(decided_beyond, beyond, np.where(code == VERDICTS.index("equivalent"), within,
                                                         np.fmax(beyond, within)))

        def disagree(level):
            low, high = interval(t.mean, t.se, t.df, level)
            out = (high < -rope) | (low > rope)
            inside = (low > -rope) & (high < rope)
            return (out != decided_beyond) | (inside != (code == VERDICTS.index("equivalent")))

        rows.append([k, rate(disagree(0.95)), rate(disagree(used)), "0"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=10000, help="simulated studies per row (default 10000)")
    parser.add_argument("--sd", type=float, default=0.035, help="spread of one fold's difference, nats (default 0.035: "
                                                                "a real smoke replicate's)")
    parser.add_argument("--rope", type=float, default=None, help="ROPE in nats (default: the verdicts' default)")
    parser.add_argument("--repeats", type=int, default=5, help="timings of the 100,000-trial verdicts (median)")
    parser.add_argument("--only", choices=["edge-cases"], default=None,
                        help="edge-cases: only --repeats sharing fold correlation and the printed interval "
                             "(writes benchmarks/results/verdicts-edge-cases.md)")
    add_result_argument(parser, "verdicts")
    args = parser.parse_args()
    from lpstudy.results.answers import DEFAULT_ROPE

    rope = args.rope if args.rope is not None else DEFAULT_ROPE.value
    load = load_average()
    if args.only == "edge-cases":
        repeats = repeat_rows(args.studies, args.sd, rope)
        more = [("The printed interval against the verdict, three arms (no effect, 1.5 ROPE, 3 ROPE) at a fold "
                 f"spread of {args.sd / 3:g} nats: before, the 1 − alpha interval whatever Holm's step; now, the "
                 "interval at the level the verdict was decided at.", interval_rows(args.studies, args.sd, rope))]
        for rows in (repeats, more[0][1]):
            for row in rows:
                print(" | ".join(map(str, row)))
        write_result("verdicts-edge-cases" if args.result == "verdicts" else args.result, None, repeats,
                     title="Verdicts: repeats that share fold correlation, and the interval a verdict prints",
                     notes=(f"{args.studies:,} simulated studies per row; fold differences with standard deviation "
                            f"{args.sd:g} nats, ROPE ±{rope:g} nats, alpha 0.05, Wilson 95 % intervals. R repeated "
                            "CVs whose folds correlate at ρ within a CV, half of that correlation common to every "
                            "repeat (Bouckaert & Frank's test takes the repeats as independent); the true "
                            "difference +ROPE, where \"worse\" is false, and 0.02 nats for the power."),
                     more_tables=more, load_at_start=load)
        return
    tables = [("Fold correlation: the correction assumes ρ = 1/K; real K-fold CV may correlate more (Bengio & "
               "Grandvalet 2004). A verdict that claims to hold at ρ = 0.5 has holds_up_to_rho ≥ 0.5.",
               correlation_rows(args.studies, args.sd, rope)),
              ("Reading a plain study as its folds arrive.", peeking_rows(args.studies, args.sd, rope)),
              ("Failed runs and non-finite losses.", failure_rows(args.studies, args.sd, rope))]
    sequential, rounds = sequential_rows(args.studies, [args.sd, rope], rope)
    tables.append((f"Until decided (K = 10, stages of {', '.join(map(str, rounds))}; Lan–DeMets O'Brien–Fleming "
                   "boundaries from the looks' joint distribution, Holm's graph across 3 arms) against running all "
                   "10 folds once, at the real spread and at a spread of one ROPE (where decisions come); wrong = any arm "
                   "called better or worse with no effect, better against a positive effect.", sequential))
    scale = scale_rows(args.repeats)
    tables.append(("The verdicts of a 100,000-trial replicate frame (7 p × 10 folds × 1,429 learning rates, 1 % "
                   "diverged), the page's computation, beside the per-p table drawn with it; medians of "
                   f"{args.repeats} runs after one warm-up. The page's budget at 100,000 trials "
                   "(docs/scale-reading.md): a first view within 4 s.", scale))
    for _, rows in tables:
        for row in rows:
            print(" | ".join(map(str, row)))
    (_, first), *more = tables
    write_result(args.result, None, first, title="Verdicts: error rates by simulation at real noise, and their cost",
                 notes=(f"{args.studies:,} simulated studies per row; fold differences with standard deviation "
                        f"{args.sd:g} nats (a real smoke replicate's spread), ROPE ±{rope:g} nats, alpha 0.05; "
                        "rates with their Wilson 95 % intervals. " + tables[0][0]),
                 more_tables=more, load_at_start=load)


if __name__ == "__main__":
    main()
