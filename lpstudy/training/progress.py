"""Progress on standard error: a rich bar over a run's steps with its losses and throughput."""

from __future__ import annotations

import math
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from lpstudy.training.metrics import MetricRecord

stderr_console = Console(file=sys.stderr)


def _fmt(x: float, spec: str = ".4f") -> str:
    return format(x, spec) if x is not None and math.isfinite(x) else "–"


class TrainingProgress:
    """A context manager whose `on_step` and `on_eval` plug into lpstudy.training.trainer.train."""

    def __init__(self, total_steps: int, description: str = "train", console: Console | None = None):
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[train_loss]} · val {task.fields[val_loss]} · {task.fields[tps]} tok/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console or stderr_console,
            transient=False,
        )
        self.task = self.progress.add_task(description, total=total_steps, train_loss="–", val_loss="–", tps="–")

    def __enter__(self) -> "TrainingProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def on_step(self, step: int, loss: float) -> None:
        self.progress.update(self.task, completed=step, train_loss=_fmt(loss))

    def on_eval(self, record: MetricRecord) -> None:
        self.progress.update(self.task, completed=record.step, val_loss=_fmt(record.val_loss),
                             tps=_fmt(record.tokens_per_s, ",.0f"))


def say_stderr(message: str) -> None:
    """One line (rich markup allowed) on the standard error of the moment, never wrapped."""
    Console(file=sys.stderr, highlight=False, soft_wrap=True).print(message)
