"""The finding about p of a replicate study, as `lpstudy verdict --json` gives it: its tables, a chart
as PNG, the commands that reproduce it, the runs and CPU time it spent, and its sources of variance.

    nice python benchmarks/bench_finding.py --study smoke-seeds \\
        --storage sqlite:///benchmarks/data/findings/smoke.db.gz --rope 0.5% --result finding-smoke \\
        --chart docs/finding-smoke.png

It reads only what the product prints (`python -m lpstudy verdict --json` in a subprocess) and the
study's trials (their state and training seconds), so the file says what a user of the study reads.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402
from lpstudy.design.spec import StudySpec  # noqa: E402

COLOURS = {"better": "#2ca02c", "equivalent": "#1f77b4", "worse": "#d62728", "undecided": "#7f7f7f"}


def unpacked(storage: str) -> str:
    """The storage URL itself, or, for a gzipped SQLite file (sqlite:///....db.gz, as the committed
    studies are kept), the URL of a copy unpacked into a temporary folder."""
    if not storage.endswith(".gz"):
        return storage
    import gzip
    import shutil
    import tempfile

    packed = Path(storage.removeprefix("sqlite:///"))
    copy = Path(tempfile.mkdtemp(prefix="finding-")) / packed.name.removesuffix(".gz")
    with gzip.open(packed) as src, copy.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return f"sqlite:///{copy}"


def verdict_json(study: str, storage: str, rope: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "lpstudy", "verdict", "--study", study, "--storage", storage,
                           "--rope", rope, "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def pct(x) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:+.2f} %"


def nats(x, digits: int = 4) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}"


def plain(x, digits: int = 4) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def p_name(value) -> str:
    return "∞" if str(value) == "inf" else f"{float(value):g}"


def arm_rows(answer: dict) -> list[list]:
    """The verdict table: each arm's difference with the interval its verdict was decided on (at the
    level Holm's procedure tested it: `confidence`), its sources of variance and its runs."""
    ref = answer["reference"]
    rows = [["p", "mean loss (nats)", "difference to p = 2 (nats) [the verdict's interval]", "relative",
             "level", "verdict", "σ_fold", "σ_seed", "cells × seeds"]]
    rows.append([p_name(ref["value"]), plain(ref["mean"]), "reference", "–", "–", "–", "–", "–",
                 f"{ref['n_folds']} runs"])
    for arm in answer["arms"]:
        level = arm.get("confidence")
        rows.append([p_name(arm["value"]), plain(arm["mean"]),
                     f"{nats(arm['diff'])} [{nats(arm['low'])}, {nats(arm['high'])}]",
                     f"{pct(arm['rel_diff'])} [{pct(arm['rel_low'])}, {pct(arm['rel_high'])}]",
                     "–" if level is None else f"{100 * level:.1f} %", arm["verdict"],
                     plain(arm.get("sigma_fold")), plain(arm.get("sigma_seed")),
                     f"{arm.get('cells', 0)} × {arm.get('seeds', 1):g}"])
    return rows


def convergence_rows(answer: dict) -> list[list]:
    conv = answer.get("convergence") or {}
    rows = [["p", "endpoint", "difference [95 %]", "relative", "verdict", "runs that never reached it"]]
    for arm in conv.get("arms", []):
        rows.append([p_name(arm["value"]), arm["endpoint"], f"{nats(arm['diff'], 2)} [{nats(arm['low'], 2)}, "
                     f"{nats(arm['high'], 2)}] {arm.get('unit', '')}", pct(arm.get("rel_diff")), arm["verdict"],
                     str(arm.get("censored", 0))])
    return rows


def spent(study: str, storage: str) -> tuple[int, float, StudySpec]:
    """(complete runs, CPU hours of training, the spec) of the study."""
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.reading.frames import load_study

    data = load_study(open_reader(storage), study)
    done = data.trials[data.trials["state"] == "COMPLETE"]
    seconds = float(done["wall_time_s"].fillna(done["duration_s"]).sum())
    if data.info.spec is None:
        raise SystemExit(f"{study} has no lpstudy spec: make it with `lpstudy replicate` (bench_finding reads its design)")
    return len(done), seconds / 3600, data.info.spec


def command_of(study: str, spec) -> str:
    """The replicate command that makes this study (from its stored spec, a StudySpec)."""
    from lpstudy.design.space import Choice, Fixed

    p_entry = spec.space.get("p")
    ps = ",".join(p_name(p) for p in spec.p_values or (p_entry.choices if isinstance(p_entry, Choice) else []))
    sets = "".join(f" --set {param.name}={param.value}" for param in spec.space.params
                   if isinstance(param, Fixed) and param.name not in ("folds", "gain_init"))
    gain_entry = spec.space.get("gain_init")
    gain = gain_entry.value if isinstance(gain_entry, Fixed) else None
    seeds = spec.seeds
    return (f"lpstudy replicate --study {study} --preset {spec.preset} --p {ps} --folds {spec.folds}"
            + (f" --seeds {seeds}" if seeds > 1 else "") + (f" --gain-init {gain}" if gain is not None else "") + sets)


def chart(answer: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = answer["arms"]
    rope = answer["rope"]["relative"] or 0.0
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(arms) + 2.2), dpi=120)
    ax.axvspan(-100 * rope, 100 * rope, color="#dddddd")
    ax.axvline(0, color="black", lw=0.8)
    for i, arm in enumerate(arms):
        colour = COLOURS.get(arm["verdict"], "#7f7f7f")
        ax.plot([100 * arm["rel_low"], 100 * arm["rel_high"]], [i, i], color=colour, lw=3)
        ax.plot([100 * arm["rel_diff"]], [i], "o", color=colour)
        ax.text(100 * arm["rel_high"], i + 0.18, f" {arm['verdict']}", color=colour, fontsize=8)
    ax.set_yticks(range(len(arms)), [f"p = {p_name(a['value'])}" for a in arms])
    ax.set_ylim(len(arms) - 0.4, -0.6)  # the first arm on top; room for each verdict's label, one arm too
    ax.set_xlabel("final validation loss against p = 2 (%), with the interval each verdict was decided on")
    ax.set_title(f"{title}\ngrey: the ROPE, {answer['rope']['words']}", fontsize=9, loc="left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", required=True)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--rope", default="0.5%")
    parser.add_argument("--chart", type=Path, default=None, help="where to write the PNG (default: none)")
    add_result_argument(parser, "finding")
    args = parser.parse_args()
    load = load_average()
    storage = unpacked(args.storage)
    answer = verdict_json(args.study, storage, args.rope)
    runs, hours, spec = spent(args.study, storage)
    title = f"{args.study}: {runs} runs, {hours:.2f} CPU hours"
    if args.chart:
        chart(answer, args.chart, title)
    arms = arm_rows(answer)
    more = [("Convergence (the same engine; steps interpolated as lpstudy verdict does):", convergence_rows(answer))]
    notes = (f"The study: `{command_of(args.study, spec)}` then `lpstudy worker --study {args.study}` (as many as the "
             f"machine holds); read with `lpstudy verdict --study {args.study} --rope {args.rope}`. {runs} complete runs, "
             f"{hours:.2f} CPU hours of training. K = {answer['k']}, seeds per fold {answer.get('seeds') or 1}, "
             f"reference p = {p_name(answer['reference']['value'])}. The verdict's sentence: {answer['sentence']}")
    for row in arms:
        print(" | ".join(map(str, row)))
    print(answer["sentence"])
    write_result(args.result, None, arms, title=f"The finding about p: {args.study}", notes=notes, more_tables=more,
                 load_at_start=load)


if __name__ == "__main__":
    main()
