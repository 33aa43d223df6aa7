"""A sequential replicate's rounds (`lpstudy replicate --until-decided`), as `lpstudy worker` runs
them: a worker takes the round's waiting cells like any grid worker; when none is left it computes
the verdicts (lpstudy.results.answers, the same as `lpstudy verdict`) once the round is over, and
enqueues the next round's cells for the reference and the arms still undecided
(lpstudy.study.studies.enqueue_round: under the storage's lock, each cell once however many
workers finish a round at the same moment). Every worker anywhere does this, so no process has to
stay up to lead the study. It stops when every arm is decided or the last round (--max-folds) ran."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lpstudy.db.kinds.base import StudyStorage

POLL_S = 3.0  # a worker waiting for the round's running cells looks again this often


def next_round(storage: StudyStorage, study: str, say=None) -> str:
    """What comes after the cells that ran: "wait" (cells of the round still run), "enqueued"
    (the next round's cells are waiting), or "over" (every arm decided, or the last round ran).
    storage: the worker's own, which reads the verdicts' data too."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.compare import verdict_data
    from lpstudy.study.studies import enqueue_round

    data = verdict_data(storage, study, curves=False)
    plan = data.info.spec.get("until_decided") or {}
    if data.trials["state"].isin(["WAITING", "RUNNING"]).any():
        return "wait"
    answer = study_answer(data, stage_options(plan, plan.get("reference")))
    seq = answer.get("sequential")
    if not seq or seq["over"]:
        return "over"
    done = seq["looks_done"]
    undecided = [arm["value"] for arm in seq["arms"] if arm["state"] in ("running", "undecided")]
    folds = seq["rounds"][done]
    enqueued, open_ = enqueue_round(storage, study, [answer["reference"]["value"], *undecided], folds)
    if enqueued and say:
        from lpstudy.values import format_p

        decided = ", ".join(f"p = {format_p(float(k))} after {v} folds" for k, v in seq["stopped"].items()) or "none yet"
        say(f"stage {done + 1} of {len(seq['rounds'])}: {enqueued} cell(s) on folds up to {folds - 1} for "
            f"{len(undecided)} undecided arm(s) and the reference (decided: {decided})")
    # enqueued by another worker a moment ago: work to do; nothing enqueued and nothing open: the
    # round's cells failed for good, and the verdicts stand as they are
    return "enqueued" if enqueued or open_ else "over"


def compare_stage(storage: StudyStorage, name: str, say=None) -> str:
    """next_round for a comparison run --until-decided (lpstudy.study.compare.next_study calls it once
    a stage's cells are over): the same verdicts over the arms' replicate grids, and the next stage's
    folds for the reference arm and the arms still undecided (lpstudy.study.compare.enqueue_stage)."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.compare import verdict_data
    from lpstudy.study.compare import enqueue_stage, load_plan

    plan = load_plan(storage, name)
    stages = plan.until_decided
    data = verdict_data(storage, name, curves=False)
    if data.trials["state"].isin(["WAITING", "RUNNING"]).any():
        return "wait"
    answer = study_answer(data, stage_options(stages))
    seq = answer.get("sequential")
    if seq and seq["over"]:
        return "over"
    done = seq["looks_done"] if seq else 0
    rounds = seq["rounds"] if seq else [int(r) for r in stages["rounds"]]
    stopped = set(seq["stopped"]) if seq else set()
    undecided = [plan.label(v) for v in plan.values if plan.label(v) not in stopped]  # the reference is never stopped
    enqueued, open_ = enqueue_stage(storage, name, plan, undecided, rounds[done])
    if enqueued and say:
        decided = ", ".join(f"{k} after {v} folds" for k, v in seq["stopped"].items()) if seq else ""
        say(f"stage {done + 1} of {len(rounds)}: {enqueued} cell(s) on folds up to {rounds[done] - 1} for "
            f"{len(undecided) - 1} undecided arm(s) and the reference (decided: {decided or 'none yet'})")
    return "enqueued" if enqueued or open_ else "over"


def run_rounds(options, say, storage):
    """`lpstudy worker` on a sequential replicate: cells until no round is left (see the module), each
    round's worker on storage, the study's storage the caller opened."""
    from lpstudy.study.worker import ROUND_DONE, WorkerReport, run_worker, stop_line

    report = WorkerReport()
    started = time.monotonic()
    while True:
        left = None if options.timeout is None else options.timeout - (time.monotonic() - started)
        if left is not None and left <= 0:
            report.reason = "--timeout reached"
            break
        one = run_worker(dataclasses.replace(options, announce=False, timeout=left), storage=storage)
        for state, count in one.trials.items():
            report.trials[state] = report.trials.get(state, 0) + count
        if one.reason != ROUND_DONE:
            report.reason, report.interrupted, report.exit_code = one.reason, one.interrupted, one.exit_code
            break
        step = next_round(storage, options.study, say)
        if step == "over":
            report.reason = "every arm is decided or the last round ran (lpstudy verdict shows them)"
            break
        if step == "wait":
            time.sleep(POLL_S)
    say(stop_line(report))
    return report
