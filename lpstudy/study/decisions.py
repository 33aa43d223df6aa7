"""What a worker does next: the typed answers its study's decider gives, as SMAC3's intensifier
answers its optimisation loop (the loop asks, one object per kind of study decides).

The worker's one loop (lpstudy.study.worker.Worker) asks its decider `next(done)` before every
trial, after its own checks (a signal, --n-trials, --timeout: written once there, as Optuna's
`study.optimize` keeps them), and does what it is told:

    RunTrial(trial, source)   run this trial of that study (a search's, a grid's, a comparison's arm)
    Wait(seconds)             nothing to take now, but something runs whose end may change that
    Done(reason)              nothing is left for this worker: stop, saying why

A decider's parts answer one more, which the loop never sees:

    StageOver()               a stage of a study run --until-decided has no cell waiting: the stage
                              engine (lpstudy.study.stages.Stages) decides what comes next

The deciders, one per kind of study (lpstudy.study.deciders.decider_for picks one):

    a search                  its trials (lpstudy.study.sources.SearchTrials: asked within its target,
                              only races past the race reserve: the intensifier's rule)
    a replicate or grid       its cells (lpstudy.study.sources.GridCells)
    --until-decided           its stages (lpstudy.study.stages.Stages) around its cells
    a comparison              its arms (lpstudy.study.compare_worker.Comparison), with --until-decided
                              inside its stages
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union

if TYPE_CHECKING:
    import optuna

    from lpstudy.study.sources import StudySource


@dataclass(frozen=True)
class RunTrial:
    """Run `trial`, claimed (RUNNING and this worker's) from the study `source` opened."""

    trial: optuna.Trial
    source: StudySource


@dataclass(frozen=True)
class Wait:
    """Nothing to take now; look again after `seconds` (None: the loop's own wait, longer each time
    nothing was there, lpstudy.study.worker.IDLE_POLL_MAX_S; 0: at once)."""

    seconds: float | None = None


@dataclass(frozen=True)
class StageOver:
    """A stage of a study run --until-decided has no cell waiting: the verdicts decide the next."""


@dataclass(frozen=True)
class Done:
    """Nothing is left for this worker; `reason` is what its stop line says."""

    reason: str


Decision = Union[RunTrial, Wait, Done]  # what the worker's loop is told
Claim = Union[RunTrial, Wait, StageOver, Done]  # what a study's trials answer (a stage's end included)


class Sources(Protocol):
    """Where a decider opens a study to take trials from (the worker: its storage, its objective's
    context, where it says things)."""

    def open(self, name: str, arm: bool = False) -> StudySource: ...

    def say(self, message: str) -> None: ...


class Decider(Protocol):
    """What the worker's loop asks (see the module)."""

    def start(self, sources: Sources) -> str:
        """Open what it takes trials from; the line the worker says as it starts."""
        ...

    def next(self, done: int) -> Decision:
        """What to do now, the worker having run `done` trials."""
        ...


class Staged(Protocol):
    """A decider whose stages another decides (lpstudy.study.stages.Stages): its `claim` may be StageOver."""

    def start(self, sources: Sources) -> str: ...

    def claim(self, done: int) -> Claim: ...


def unstaged(claim: Claim) -> Decision:
    """A claim where no stage engine runs: a stage's end ends the worker, as it ended a worker that
    runs no stages (lpstudy.study.deciders.decider_for gives a study run --until-decided its stages)."""
    if isinstance(claim, StageOver):
        return Done("no cell of this round is waiting")
    return claim
