"""`lpstudy worker --study NAME` for a comparison (lpstudy.study.compare): one trial at a time from
an arm's waiting tuning trial (a race, a retry), else the arm whose tuning has used least of its
budget, then the arms' replicate grids; with
--until-decided, stage by stage (lpstudy.study.stages decides each next stage from the verdicts)."""

from __future__ import annotations

import dataclasses
import time

from lpstudy.errors import UserError
from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.study.compare import STAGE_OVER, WAIT, WAIT_S, ComparePlan, NoStudy, load_plan, next_study
from lpstudy.study.stages import OVER, next_stage
from lpstudy.study.stages import WAIT as STAGE_WAIT
from lpstudy.study.worker import WorkerOptions, WorkerReport, run_worker, stop_line
from lpstudy.training.progress import say_stderr


def next_target(storage: StudyStorage, name: str, plan: ComparePlan, say=None) -> str | NoStudy | None:
    """next_study, with the next stage enqueued (lpstudy.study.stages.next_stage) once a stage's
    cells are over, and looked at again: a study to take a trial from, WAIT, or None when nothing
    is left now."""
    for _ in range(2):  # a second look after a stage is enqueued
        target = next_study(storage, name, plan)
        if target is not STAGE_OVER:
            return target
        step = next_stage(storage, name, say)
        if step is OVER:
            return None
        if step is STAGE_WAIT:
            return WAIT
    return WAIT


def run_compare_worker(options: WorkerOptions, storage: StudyStorage, say=None) -> WorkerReport:
    """`lpstudy worker --study NAME` for a comparison: one trial at a time from next_study, until
    nothing is left, --n-trials is reached or --timeout has passed (no trial starts after it). It
    says once what it works on and why it stopped; each trial's line names its arm's study.
    storage: the worker's one storage, for every arm's trials and the stage checks; the caller
    closes it."""
    speak = say or (lambda message: say_stderr(f"[dim]lpstudy worker:[/] {message}"))
    plan = load_plan(storage, options.study)
    if plan is None:  # the caller found a comparison of that name; it was deleted since
        raise UserError(f"no comparison named {options.study!r} in {storage.display_url} any more")
    speak(f"comparison {options.study!r} in {storage.display_url}: {len(plan.values)} arms of {plan.factor}, "
          "a trial at a time from the arm with the least of its tuning budget spent, then the folds")
    report = WorkerReport()
    started, done = time.monotonic(), 0
    empty = None  # the study that last gave no trial
    while True:
        if options.n_trials is not None and done >= options.n_trials:
            report.reason = f"ran {done} trial(s) (--n-trials)"
            break
        if options.timeout is not None and time.monotonic() - started > options.timeout:
            report.reason = "--timeout reached"
            break
        target = next_target(storage, options.study, plan, speak)
        if target is None:
            report.reason = ("every arm is decided or the last stage ran (lpstudy verdict shows them)"
                             if plan.until_decided else "nothing left to run in the comparison")
            break
        if isinstance(target, NoStudy):  # WAIT: a stage's cells still run elsewhere
            time.sleep(WAIT_S)
            continue
        # races the arm's tuning enqueues (within its budget) are this loop's next trials (next_study)
        after = None if options.n_trials is None else options.n_trials - done - 1
        one = run_worker(dataclasses.replace(options, study=target, n_trials=1, announce=False, trials_after=after,
                                             race_reserve=False),
                         say=lambda message, arm=target: speak(f"{arm}: {message}"), storage=storage)
        if not one.trials and not one.exit_code:
            if target != empty:  # another worker took its last trial meanwhile: look again, once
                empty = target
                continue
            report.reason = f"{target} had no trial to give ({one.reason})"
            break
        empty = None
        for state, count in one.trials.items():
            report.trials[state] = report.trials.get(state, 0) + count
        done += 1
        if one.interrupted or one.exit_code:
            report.interrupted, report.exit_code, report.reason = one.interrupted, one.exit_code, one.reason
            break
    speak(stop_line(report))
    return report
