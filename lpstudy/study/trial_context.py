"""What an objective gets and gives back: the worker's contract with whatever runs a trial.

The worker (lpstudy.study.worker) claims a trial, keeps its heartbeat, and tells Optuna the outcome;
an objective, called with a TrialContext and the claimed trial, runs it and returns a TrialOutcome.
The default objective trains (lpstudy.study.objective.run_trial); another one, such as the load
test's stand-in (benchmarks/bench_load.py), runs in the same loop without importing torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.design.spec import StudySpec
from lpstudy.training.metrics import uniform_guess_loss


class TrialLost(Exception):
    """Raised by an objective whose trial cannot go on in this run but may in another, such as a
    retry whose checkpoint the store will not give (lpstudy.study.checkpoints.CheckpointUnreadable):
    the worker fails the trial with this message and enqueues it again, as the trial of a worker
    that died (counted against max_retry)."""


@dataclass
class TrialOutcome:
    state: TrialState
    value: float | None
    summary: Any = None  # RunSummary
    reason: str = ""  # why FAIL: "interrupted", or the error
    overrides: dict[str, Any] = field(default_factory=dict)
    # Enqueue the trial again whatever the study (TrialLost): not only a grid's cells are retried.
    retry: bool = False

    @classmethod
    def of_run(cls, summary: Any, vocab_size: int, *, pruned: bool, interrupted: bool,
               overrides: dict[str, Any] | None = None) -> TrialOutcome:
        """How a trained run ends its trial (a RunSummary): PRUNED when the pruner stopped it (Optuna's
        tell stores its last reported value); COMPLETE at ln(vocabulary size) when it diverged, so
        that samplers learn to avoid it; FAIL when it was interrupted or has no finite validation
        loss; else COMPLETE at its final validation loss."""
        overrides = dict(overrides or {})
        if pruned:
            return cls(TrialState.PRUNED, None, summary, overrides=overrides)
        if summary.diverged:
            return cls(TrialState.COMPLETE, uniform_guess_loss(vocab_size), summary, overrides=overrides)
        if interrupted:
            return cls(TrialState.FAIL, None, summary, reason="interrupted", overrides=overrides)
        if not math.isfinite(summary.final_val_loss):
            return cls(TrialState.FAIL, None, summary, reason="no finite validation loss", overrides=overrides)
        return cls(TrialState.COMPLETE, summary.final_val_loss, summary, overrides=overrides)


@dataclass
class TrialContext:
    """What the objective needs besides the trial: where to write, what to train on, where."""

    storage: StudyStorage
    study: optuna.Study
    spec: StudySpec
    corpus: Any  # lpstudy.training.data.Corpus; None for an objective that does not train
    device: str = "cpu"
    worker_id: str = ""
    should_stop: Callable[[], bool] = lambda: False
    show_progress: bool = True
    artifact_store: Any = None  # where trials keep checkpoints (lpstudy.study.checkpoints); None: nowhere
    threads: int | None = None  # a CPU worker's --threads; None: each run's default (training.threads)


# Runs the claimed trial and says how it ended; the worker tells Optuna (so that a crash still ends it).
Objective = Callable[[TrialContext, optuna.Trial], TrialOutcome]
