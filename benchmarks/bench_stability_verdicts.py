"""The stability and convergence verdicts on planted studies whose truth is known (issue 53, item 5):
how often they call a difference that is not there, how often they find one that is, and that
divergence and convergence never read "equivalent" from what their data cannot show.

1. Stability endpoints through the engine's tests (answers.fold_tests.fold_verdicts, the arrays
   endpoint_verdicts decides with): 10,000 simulated replicates a row, two arms against a reference,
   K = 10 folds correlated at ρ = 1/K (the training text the folds share), each endpoint at a noise
   like a smoke replicate's and its own ROPE (answers.stability_verdicts.ENDPOINTS); no effect (false
   better or worse) and a planted effect beyond the ROPE (power). Loss spikes are Poisson counts.
   Then the whole path (study_answer on tests/test_stability_verdicts.py's planted replicates,
   curves and all) on fewer studies.
2. Divergence, exactly: every outcome of the two binomial counts weighted by its probability (no
   simulation error), the verdict from Fisher's test and Newcombe's interval; and the two cases the
   issue names, 0/10 against 0/10 and 3/10 against 0/10.
3. Convergence: both arms crossing inside one evaluation interval (25 steps, a ROPE of ±5 % of about
   230 steps), where "equivalent" would be a claim the evaluations cannot support; and a true 20 %
   delay (power), through study_answer.

    python benchmarks/bench_stability_verdicts.py
    python benchmarks/bench_stability_verdicts.py --studies 2000 --full 20 --result none
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

K = 10
ALPHA = 0.05
# endpoint: (reference mean, per-run sd, the ROPE's margin at that mean, planted effect (worse))
ENDPOINT_NOISE = {
    "max_logit": (10.0, 0.3, 1.0, 1.5),  # logits: 3 % run to run; ROPE ±10 % of 10; planted +15 %
    "min_entropy": (1.0, 0.05, 0.1, -0.15),  # nats; planted 0.15 nats lower (higher is better: read negated)
    "lr_sensitivity": (0.02, 0.005, 0.01, 0.02),  # nats of mean excess; ROPE the final loss's ±0.01 nats
}


def wilson(k: int, n: int) -> str:
    from lpstudy.results.analysis.intervals import wilson_interval

    low, high = wilson_interval(k, n, 0.95)
    return f"{k / n:.3f} [{low:.3f}, {high:.3f}]"


def correlated(rng, studies: int, arms: int, sd: float) -> np.ndarray:
    """Run values' noise, studies × arms × folds, the folds correlated at ρ = 1/K within each arm."""
    rho = 1.0 / K
    shared = rng.normal(0, sd * np.sqrt(rho), (studies, arms, 1))
    return shared + rng.normal(0, sd * np.sqrt(1 - rho), (studies, arms, K))


def engine_rows(studies: int, seed: int = 0) -> list:
    from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts

    rng = np.random.default_rng(seed)
    rows = []
    for name, (mean, sd, margin, effect) in ENDPOINT_NOISE.items():
        sign = -1.0 if name == "min_entropy" else 1.0
        for label, shift in (("no effect", 0.0), (f"planted {effect:+g}", effect)):
            runs = mean + correlated(rng, studies, 3, sd)  # arm 0: the reference; arm 2 carries the effect
            runs[:, 2] += shift
            diffs = sign * (runs[:, 1:] - runs[:, :1])
            verdict = fold_verdicts(diffs, K, margin, ALPHA).verdict
            false = np.isin(verdict[:, 0], [VERDICTS.index("better"), VERDICTS.index("worse")])
            if shift:
                found = verdict[:, 1] == VERDICTS.index("worse")
                rows.append([name, label, f"±{margin:g}", "–", wilson(int(found.sum()), studies)])
            else:
                false |= np.isin(verdict[:, 1], [VERDICTS.index("better"), VERDICTS.index("worse")])
                rows.append([name, label, f"±{margin:g}", wilson(int(false.sum()), studies), "–"])
    for label, extra in (("no effect", 0.0), ("planted +2 a run", 2.0)):  # loss spikes: Poisson counts
        counts = rng.poisson(1.0, (studies, 3, K)).astype("float64")
        counts[:, 2] += rng.poisson(extra, (studies, K)) if extra else 0
        verdict = fold_verdicts(counts[:, 1:] - counts[:, :1], K, 1.0, ALPHA).verdict
        decided = np.isin(verdict, [VERDICTS.index("better"), VERDICTS.index("worse")])
        if extra:
            rows.append(["loss_spikes", label, "±1", "–", wilson(int((verdict[:, 1] == VERDICTS.index("worse")).sum()),
                                                              studies)])
        else:
            rows.append(["loss_spikes", label, "±1", wilson(int(decided.any(axis=1).sum()), studies), "–"])
    return rows


def full_path_rows(studies: int) -> list:
    from lpstudy.results.answers import study_answer
    from tests.test_stability_verdicts import planted

    false = found = 0
    for seed in range(studies):
        answer = study_answer(planted({2.0: 10.0, 3.0: 10.0, 4.0: 10.0}, seed=seed)).to_json()
        false += any(r["verdict"] in ("better", "worse") for r in answer["stability"]["verdicts"])
        answer = study_answer(planted({2.0: 10.0, 3.0: 11.5}, {2.0: 1.0, 3.0: 0.85}, seed=seed)).to_json()
        rows = {r["endpoint"]: r for r in answer["stability"]["verdicts"]}
        found += rows["max_logit"]["verdict"] == "worse" and rows["min_entropy"]["verdict"] == "worse"
    return [["every endpoint, no effect (p = 3, 4 against p = 2)", studies, wilson(false, studies), "–"],
            ["largest logit +15 % and entropy −0.15 nats (p = 3)", studies, "–", wilson(found, studies)]]


def divergence_rows() -> list:
    import pandas as pd
    from scipy.stats import binom

    from lpstudy.results.answers.stability_verdicts import divergence_verdicts

    def verdict(k: int, n: int, ref_k: int, ref_n: int):
        runs = pd.DataFrame({"arm": [3.0] * n + [2.0] * ref_n,
                             "diverged": [True] * k + [False] * (n - k) + [True] * ref_k + [False] * (ref_n - ref_k)})
        return divergence_verdicts(runs, 2.0, ALPHA)[0]

    rows = []
    for k, ref_k in ((0, 0), (3, 0)):
        row = verdict(k, 10, ref_k, 10)
        rows.append([f"{k}/10 against {ref_k}/10 (the issue's case)", "–", row.verdict,
                     f"[{row.low:+.2f}, {row.high:+.2f}]", str(row.folds_to_decide or "–")])
    import lpstudy.results.answers.stability_verdicts as stability

    plan = stability.runs_to_decide
    for k, ref_k, wanted in ((0, 0, "equivalent"), (3, 0, "worse")):  # the runs the plan names, decided how often
        n = verdict(k, 10, ref_k, 10).folds_to_decide
        stability.runs_to_decide = lambda *args: None  # the verdict alone, not its own plan again
        try:
            share = sum(binom.pmf(a, n, k / 10) * binom.pmf(b, n, ref_k / 10) for a in range(n + 1) for b in range(n + 1)
                        if binom.pmf(a, n, k / 10) * binom.pmf(b, n, ref_k / 10) > 1e-12
                        and verdict(a, n, b, n).verdict == wanted)
        finally:
            stability.runs_to_decide = plan
        rows.append([f"{k}/10 against {ref_k}/10: the {n} runs each its plan names, at rates {k / 10:g} and "
                     f"{ref_k / 10:g}", f"{wanted} (the plan's 80 % power)", f"{share:.4f}", "exact", str(n)])
    for rate, ref_rate, n in ((0.1, 0.1, 10), (0.1, 0.1, 50), (0.0, 0.0, 10), (0.3, 0.0, 10), (0.4, 0.05, 30),
                              (0.4, 0.05, 50)):
        stability.runs_to_decide = lambda *args: None  # the verdicts alone: their plans are not measured here
        try:
            table = {(k, r): verdict(k, n, r, n).verdict for k in range(n + 1) for r in range(n + 1)}
        finally:
            stability.runs_to_decide = plan
        weight = {(k, r): binom.pmf(k, n, rate) * binom.pmf(r, n, ref_rate) for k, r in table}
        share = {v: sum(w for key, w in weight.items() if table[key] == v) for v in ("better", "worse", "equivalent")}
        what = "false better/worse" if rate == ref_rate else "worse (power)"
        figure = share["better"] + share["worse"] if rate == ref_rate else share["worse"]
        rows.append([f"true rates {rate:g} against {ref_rate:g}, {n} runs each", what, f"{figure:.4f}",
                     f"equivalent {share['equivalent']:.4f}", "exact"])
    return rows


def convergence_rows(studies: int) -> list:
    from lpstudy.results.answers import study_answer
    from tests.test_convergence_resolution import study
    from tests.test_convergence_verdicts import planted_study

    equivalent = undecided = worse = 0
    for seed in range(studies):
        rng = np.random.default_rng(seed)
        base = 55 + rng.normal(0, 3, 10)
        answer = study_answer(study({2.0: list(base), 3.0: list(base * (1 + rng.uniform(0, 0.004)))})).to_json()
        (row,) = [a for a in answer["convergence"]["arms"] if a["endpoint"] == "steps_to_threshold"]
        equivalent += row["verdict"] == "equivalent"
        undecided += row["verdict"] == "undecided" and bool(row.get("unresolved"))
        delayed = study_answer(planted_study({2.0: 1.0, 3.0: 1.2}, seed=seed, shared=True)).to_json()
        (row,) = [a for a in delayed["convergence"]["arms"] if a["endpoint"] == "steps_to_threshold"]
        worse += row["verdict"] == "worse"
    return [["both arms cross inside one evaluation interval (25 steps; ROPE about ±11 steps)", studies,
             wilson(equivalent, studies), wilson(undecided, studies)],
            ["a true 20 % delay (evaluations 50 steps apart)", studies, "–", f"worse {wilson(worse, studies)}"]]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=10_000, help="simulated studies a row of the engine's tests")
    parser.add_argument("--full", type=int, default=100, help="planted studies a row through study_answer")
    add_result_argument(parser, "stability_verdicts")
    args = parser.parse_args(argv)
    load = load_average()
    rows = [["endpoint", "planted", "ROPE", "false better/worse", "power (worse)"], *engine_rows(args.studies)]
    full = [["planted replicates (K = 10) through study_answer", "studies", "false better/worse", "found"],
            *full_path_rows(args.full)]
    divergence = [["divergence", "measured", "verdict or share", "interval or equivalent", "runs per arm to decide"],
                  *divergence_rows()]
    convergence = [["convergence", "studies", "equivalent", "undecided, with the eval_interval that would resolve it"],
                   *convergence_rows(args.full)]
    notes = (f"{args.studies:,} simulated replicates a row: two arms against a reference, K = {K} folds correlated at "
             f"ρ = 1/K, alpha {ALPHA}, Holm across the two arms within each endpoint; rates with their Wilson 95 % "
             "intervals. A reviewer expects false better/worse at most 5 %.")
    write_result(args.result, None, rows, notes, title="Stability and convergence verdicts on planted studies",
                 more_tables=[("The same verdicts through the whole answer (curves read, endpoints built, the "
                               "engine, the sentence).", full),
                              ("Divergence from its counts: Fisher's exact test (Holm) and Newcombe's interval from "
                               "Wilson's, ROPE ±10 percentage points; shares exact over the binomial outcomes. Zero "
                               "events in few runs never read equivalent.", divergence),
                              ("Convergence read at its resolution: where both arms cross inside one evaluation "
                               "interval, 'equivalent' would claim what the evaluations cannot show; a real delay is "
                               "still found.", convergence)], load_at_start=load)


if __name__ == "__main__":
    main()
