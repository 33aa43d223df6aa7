"""One progress bar over the trials a command's local workers run (`search`, `replicate`), with the
workers' own lines above it: it counts from the moment the workers are started (the bar says
"starting workers" while they import torch and read the corpus, then "trials"), never per worker."""

from __future__ import annotations

from typing import Callable

from optuna.trial import TrialState

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def finished_trials(study) -> int:
    """The study's finished trials: an interrupted one (FAIL, marked `stopped` by a signal and enqueued
    again: lpstudy.results.analysis.interrupted) has not finished, its retry will; after Ctrl-C the
    bar counts only the runs that ended."""
    return sum(1 for trial in study.get_trials(deepcopy=False, states=FINISHED)
               if not (trial.state == TrialState.FAIL and trial.user_attrs.get("stopped")))


def running_trials(study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def run_with_progress(options, devices: list[str], study, total: int, show: bool = True,
                      say: Callable[[str], None] | None = None) -> int:
    """Start one worker per device (options.show_progress off: the one bar is here) and wait for
    them; the bar counts the study's trials finished since the start, up to `total`. Without `show`,
    the workers' lines only. Returns spawn_workers' exit status."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from lpstudy.study.launch import spawn_workers
    from lpstudy.training.progress import stderr_console

    options.show_progress = False
    if not show:
        return spawn_workers(options, devices, say=say)
    before = finished_trials(study)
    progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=stderr_console, transient=False)
    starting = f"starting {len(devices)} worker(s)"
    task = progress.add_task(starting, total=total)

    def tick() -> None:
        try:
            done = min(total, finished_trials(study) - before)
            begun = done > 0 or running_trials(study) > 0
            progress.update(task, completed=done, description="trials" if begun else starting)
        except Exception:  # a busy database: the next tick tries again
            pass

    def line(text: str) -> None:
        progress.console.print(text, markup=False, highlight=False, soft_wrap=True)

    with progress:
        code = spawn_workers(options, devices, say=lambda m: progress.console.print(m, highlight=False, soft_wrap=True),
                             on_line=line, tick=tick)
        tick()
        if code > 128:  # stopped by a signal: the bar says so, with what finished, rather than stand as if running
            progress.update(task, description="stopped")
    return code
