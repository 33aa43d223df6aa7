"""Retrying a failed trial: a new WAITING trial with the same parameters and user attributes.

Optuna's RetryHeartbeatStaleTrialCallback does the bookkeeping (system attributes failed_trial and
retry_history) and counts every entry of retry_history against max_retry. lpstudy retries a trial
for two reasons that should not count alike: a crash (its worker died, the run raised) uses up one
of max_retry; an interruption (SIGINT/SIGTERM, e.g. Slurm's notice before a time limit) does not,
so that a cell is never dropped because its workers were stopped. The interrupted retries are
counted in the system attribute INTERRUPTIONS_ATTR; crashes = len(retry_history) - interruptions.
"""

from __future__ import annotations

import copy
import warnings

import optuna
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial

INTERRUPTIONS_ATTR = "lpstudy_interruptions"


def crashes_so_far(trial: FrozenTrial) -> int:
    """How many times this trial's series was retried after a crash (not after an interruption)."""
    history = trial.system_attrs.get("retry_history", [])
    return max(0, len(history) - int(trial.system_attrs.get(INTERRUPTIONS_ATTR, 0)))


class RetryCallback:
    """Enqueue a failed trial again, as RetryHeartbeatStaleTrialCallback does, except that an
    interruption does not count against max_retry. Used for stale trials (Optuna calls it with
    (study, trial)) and by the worker for failed and interrupted trials. Returns whether it
    enqueued a retry."""

    def __init__(self, max_retry: int | None) -> None:
        self.max_retry = max_retry

    def __call__(self, study: optuna.Study, trial: FrozenTrial, interrupted: bool = False,
                 drop_attrs: tuple[str, ...] = ()) -> bool:
        frozen = copy.copy(trial)
        attrs = {k: (list(v) if k == "retry_history" else v) for k, v in trial.system_attrs.items()
                 if not any(k.startswith(prefix) for prefix in drop_attrs)}
        if interrupted:
            attrs[INTERRUPTIONS_ATTR] = int(trial.system_attrs.get(INTERRUPTIONS_ATTR, 0)) + 1
        elif self.max_retry is not None and crashes_so_far(trial) + 1 > self.max_retry:
            return False
        frozen.system_attrs = attrs  # the public setter: the copy only, the stored trial stays
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning
            RetryHeartbeatStaleTrialCallback(max_retry=None)(study, frozen)
        return True
