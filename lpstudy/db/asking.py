"""A new trial within a study's n_trials target, as each kind of storage can make it atomic:

    under a lock     (SQLite, journal, PostgreSQL: lpstudy.db.locking) the finished and running
                     trials are counted and the new one asked under the storage's lock, so that
                     several workers never start more trials than the target
    checked after    (gRPC, MySQL: no lock across processes) the trial is asked, then a worker that
                     finds its new trial beyond the target (a racing worker's trial has a lower
                     number) gives it up: it ends FAIL with the user attribute surplus, never run

Each storage says which by the lock it composes in (lpstudy.db.locking: LockAcrossProcesses or NoLock); a caller
asks StudyStorage.ask_within_target and never which it holds.
"""

from __future__ import annotations

import enum
import warnings
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    import optuna
    from optuna.trial import TrialState

class Wait(enum.Enum):
    """Nothing to take now, but trials run whose ends may change that: look again later."""

    WAIT = "wait"


WAIT: Final = Wait.WAIT  # the target is taken by running trials: look again later


def ask_lock_name(study: str) -> str:
    """The name of the lock a study's asks are made under."""
    return f"lpstudy:ask:{study}"


def _taken() -> tuple[TrialState, ...]:
    from optuna.trial import TrialState

    return (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)


def ask(study: optuna.Study) -> optuna.Trial:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "heartbeat is supposed to be used with optimize"
        return study.ask()


def ask_counted(study: optuna.Study, target: int) -> optuna.Trial | Literal[Wait.WAIT] | None:
    """None when `target` trials have finished (COMPLETE or PRUNED), WAIT when finished and running
    trials make up the target, else a new trial."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False, states=_taken())
    finished = sum(1 for t in trials if t.state != TrialState.RUNNING)
    if finished >= target:
        return None
    if len(trials) >= target:
        return WAIT
    return ask(study)


def give_up_surplus(study: optuna.Study, trial: optuna.Trial, target: int) -> optuna.Trial | Literal[Wait.WAIT]:
    """The trial, or WAIT after failing it (user attribute surplus) where trials with lower numbers
    already make up the target."""
    from optuna.trial import TrialState

    numbers = sorted(t.number for t in study.get_trials(deepcopy=False, states=_taken()))
    if trial.number in numbers and numbers.index(trial.number) >= target:
        trial.set_user_attr("surplus", True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        return WAIT
    return trial
