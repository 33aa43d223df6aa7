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

With --finding STORAGE it writes instead the real study's section (benchmarks/results/finding-sequential-smoke.md):
a `replicate --until-decided --seeds S` study as `lpstudy verdict --json` reads it (benchmarks/bench_finding.py's
reading), its looks, the runs it spent, and the fixed designs' verdicts on the same arms beside it:

    nice python benchmarks/bench_sequential_seeds.py --finding sqlite:////tmp/seq.db --study smoke-seq-s4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_seed_verdicts import planted, rate  # noqa: E402
from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

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
                fixed = [fold_verdicts(null + shift, k, margin, cells=folds).verdict[:, 0] for shift in shifts]
                spent = [float(np.mean(s.folds_used[:, 0])) * seeds for s in seq]
                common = [label, f"{k} × {seeds} ({k * seeds})", ", ".join(map(str, rounds)), name]
                out.append([*common, "sequential", rate(np.isin(seq[0].verdict[:, 0], [better, worse])),
                            rate(seq[0].verdict[:, 0] == equivalent), rate(seq[2].verdict[:, 0] == worse),
                            rate(seq[1].verdict[:, 0] == worse),
                            f"{spent[0]:.0f} / {spent[1]:.0f}"])
                out.append([*common, "fixed", rate(np.isin(fixed[0], [better, worse])), rate(fixed[0] == equivalent),
                            rate(fixed[2] == worse), rate(fixed[1] == worse), f"{k * seeds} / {k * seeds}"])
    return out


FIXED = (("benchmarks/data/findings/smoke48.db.gz", "smoke-seeds-k48-s4"),
         ("benchmarks/data/findings/smoke.db.gz", "smoke-seeds"))  # the fixed designs at smoke (48 × 4, 10 × 5)


def finding(storage: str, study: str, rope: str, result: str, cpu: str | None = None) -> None:
    """The real study's section: its verdicts, its looks, its runs, and the fixed designs beside it."""
    from benchmarks.bench_finding import arm_rows, convergence_rows, p_name, spent, unpacked, verdict_json

    load = load_average()
    storage = unpacked(storage)  # a committed study is kept gzipped (benchmarks/data/findings)
    answer = verdict_json(study, storage, rope)
    runs, hours, spec = spent(study, storage)
    seq = answer.get("sequential") or {}
    arms = {p_name(a["value"]): a for a in answer["arms"]}
    looks = [["look", "folds (× seeds)", "information", "nominal level", *(f"p = {name}" for name in arms)]]
    for look in seq.get("looks", []):
        states = {p_name(a["value"]): a for a in look["arms"]}
        cells = []
        for name in arms:
            a = states.get(name)
            cells.append("–" if a is None else f"stopped ({a['decided']})" if a["state"] == "stopped" else
                         f"{a['state']} {100 * a['rel_diff']:+.2f} % [{100 * a['rel_low']:+.2f}, {100 * a['rel_high']:+.2f}]")
        if look["over"]:
            looks.append([look["look"], f"{look['folds']} (× {answer.get('seeds') or 1})", f"{look['information']:.3f}",
                          f"{look['boundary']:.2g}", *cells])
    beside = [["design", "runs", *(f"p = {name}: verdict, relative difference [interval]" for name in arms if name != "2"),
               "σ_fold / σ_seed (nats)"]]

    def design_row(label, answer_, runs_):
        row = [label, runs_]
        found = {p_name(a["value"]): a for a in answer_["arms"]}
        for name in arms:
            if name == "2":
                continue
            a = found.get(name)
            row.append("not in the study" if a is None else
                       f"{a['verdict']} {100 * a['rel_diff']:+.2f} % [{100 * a['rel_low']:+.2f}, {100 * a['rel_high']:+.2f}]")
        parts = [a for a in found.values() if p_name(a["value"]) in arms]
        row.append(", ".join(f"{a['sigma_fold']:.4f} / {a['sigma_seed']:.4f}" if a.get("sigma_seed") is not None
                             else "–" for a in parts) or "–")
        return row

    plan = spec.until_decided
    plan_rope = plan.rope if plan is not None and plan.rope is not None else rope
    beside.append(design_row(f"sequential, up to {answer['k']} folds × {answer.get('seeds') or 1} seeds (this study)", answer,
                             f"{seq.get('cells_run')} of at most {seq.get('cells_max')} ({len(arms) + 1} arms)"))
    for packed, name in FIXED:
        path = ROOT / packed
        if not path.exists():
            continue
        url = unpacked(f"sqlite:///{path}")
        fixed = verdict_json(name, url, rope)
        per_arm = fixed["k"] * (fixed.get("seeds") or 1)
        beside.append(design_row(f"fixed, {fixed['k']} folds × {fixed.get('seeds') or 1} seeds ({name})", fixed,
                                 f"{spent(name, url)[0]} ({len(fixed['arms']) + 1} arms × {per_arm})"))
    ps = ",".join(p_name(p) for p in spec.p_values or [])
    command = (f"lpstudy replicate --study {study} --storage sqlite:///seq.db --preset {spec.preset} --p {ps} "
               f"--gain-init matched --until-decided --max-folds {answer['k']} --seeds {answer.get('seeds') or 1} "
               f"--rope {plan_rope} --set threads=1 --workers 1")
    notes = (f"The study: `{command}` (one worker process, threads=1, under nice, on the shared 2-core machine); read "
             f"with `lpstudy verdict --study {study} --rope {rope}`. Stages of {', '.join(map(str, seq.get('rounds', [])))} "
             f"folds; {seq.get('looks_done')} of {len(seq.get('rounds', []))} looks over; {runs} complete runs "
             f"({seq.get('cells_run')} cells of at most {seq.get('cells_max')}), {hours:.2f} hours of training (the runs' "
             f"own seconds, on a machine at the load below)" + (f"; the command's CPU time: {cpu}" if cpu else "")
             + f". The verdict's sentence: {answer['sentence']}")
    print(answer["sentence"])
    write_result(result, None, arm_rows(answer),
                 title=f"The sequential design over seeds, for real: {study}", notes=notes, load_at_start=load,
                 more_tables=[("Each look: the folds it read (each with its seeds), its information fraction (n/K) and "
                               "nominal level, each arm's state there with its difference and interval relative to "
                               "p = 2.", looks),
                              ("Beside the fixed designs of the same preset and gain (benchmarks/data/findings/), each "
                               "read with the same ROPE.", beside),
                              ("Convergence (the same engine):", convergence_rows(answer))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=10000, help="planted studies per row (default 10000)")
    parser.add_argument("--finding", default=None, help="a replicate --until-decided --seeds study's storage: write "
                                                        "its section instead (benchmarks/results/finding-sequential-smoke.md)")
    parser.add_argument("--study", default="smoke-seq-s4", help="with --finding: the study (default smoke-seq-s4)")
    parser.add_argument("--rope", default="0.5%", help="with --finding: the ROPE it is read with (default 0.5%%)")
    parser.add_argument("--cpu", default=None, help="with --finding: the CPU time the study's command took, as measured")
    add_result_argument(parser, "sequential-seeds")
    args = parser.parse_args()
    if args.finding:
        finding(args.finding, args.study, args.rope,
                "finding-sequential-smoke" if args.result == "sequential-seeds" else args.result, args.cpu)
        return
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
