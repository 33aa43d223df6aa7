"""Taking trials from a study: a waiting cell, a new trial within the study's n_trials target, and
a failed trial enqueued again. Each is atomic across workers on every storage (see
docs/exactly-once.md): the storage moves a WAITING trial to RUNNING for one caller only, the
target is counted and asked under the storage's lock, and a cell is enqueued again only while it
has no other live trial."""

from __future__ import annotations

from typing import Any, Literal

import optuna
from optuna.trial import TrialState

from lpstudy.db import optuna_private
from lpstudy.db.asking import WAIT, Wait, ask
from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.db.retries import RetryCallback
from lpstudy.errors import UserError
from lpstudy.design.space import CellKey
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import trial_params
from lpstudy.values import LEASE_ATTR, METRICS_ATTR_PREFIX, RACE_FOLD_ATTR

# A spread trial still waiting when a search passes its race reserve: failed unrun, with this user attribute.
PAST_RESERVE_ATTR = "past_race_reserve"


def pop_waiting_trial(study: optuna.Study, storage: StudyStorage) -> optuna.Trial | None:
    """A WAITING trial, now RUNNING and ours; None when there is none. Atomic across workers: the
    storage moves a trial from WAITING to RUNNING for one caller only (Optuna's
    set_trial_state_values: SELECT ... FOR UPDATE on PostgreSQL, BEGIN IMMEDIATE on SQLite).

    Which trial is the storage's choice (StudyStorage.claim_waiting): on a SQL storage one of the
    oldest, through lpstudy's storage proxy the same, run by the proxy, elsewhere Optuna's own pop
    (the private Study._pop_waiting_trial_id, the first half of study.ask(), which would then sample a
    new trial when no cell waits; tests/test_optuna_private.py fails if it changes)."""
    optuna_private.forget_cached_trials(study)  # as Study.ask does: sync with the storage once per trial
    trial_id = storage.claim_waiting(study)
    return None if trial_id is None else optuna.Trial(study, trial_id)


def take_race(study: optuna.Study, storage: StudyStorage) -> optuna.Trial | Literal[Wait.WAIT] | None:
    """What a search's worker takes past its race reserve (lpstudy.design.intensify.RaceReserve): a
    waiting race, now RUNNING and ours, or a failed trial's retry (its run is owed); a spread trial
    still waiting before it is failed unrun (user attribute PAST_RESERVE_ATTR), as the replay
    benchmark leaves it. WAIT where nothing owed waits but trials run (their ends may enqueue
    races); None where nothing owed waits and nothing runs: the run is over. Atomic across workers
    as pop_waiting_trial is."""
    while True:
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if not any(_owed(t.user_attrs, t.system_attrs) for t in waiting):
            return WAIT if storage.count_trials(study, (TrialState.RUNNING,)) else None
        trial = pop_waiting_trial(study, storage)
        if trial is None:
            continue  # another worker took it: look again
        frozen = optuna_private.study_storage(study).get_trial(optuna_private.trial_id(trial))
        if _owed(frozen.user_attrs, frozen.system_attrs):
            return trial
        trial.set_user_attr(PAST_RESERVE_ATTR, True)
        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)


def _owed(user_attrs: dict[str, Any], system_attrs: dict[str, Any]) -> bool:
    """A race's trial, or a failed trial enqueued again (Optuna's `failed_trial`, lpstudy.db.retries)."""
    return user_attrs.get(RACE_FOLD_ATTR) is not None or "failed_trial" in system_attrs


def ask_within_target(study: optuna.Study, spec: StudySpec, storage: StudyStorage
                      ) -> optuna.Trial | Literal[Wait.WAIT] | None:
    """study.ask(), unless the study's n_trials target is taken: None when that many trials have
    finished (COMPLETE or PRUNED), WAIT when finished and running trials make up the target. How the
    storage keeps workers from starting more trials than the target (the count and the ask under its
    lock, or a surplus trial given up: lpstudy.db.asking) is the storage's business."""
    if spec.n_trials is None:
        return ask(study)
    return storage.ask_within_target(study, spec.n_trials)


def requeue(study: optuna.Study, trial_id: int, max_retry: int, interrupted: bool = False,
            spec: StudySpec | None = None, *, storage: StudyStorage) -> bool:
    """Enqueue a failed trial again with its parameters and user attributes (a new WAITING trial),
    with the same bookkeeping (failed_trial, retry_history) as Optuna's
    RetryHeartbeatStaleTrialCallback for a trial whose worker died; False when a crash has been
    retried max_retry times (an interruption does not count, see lpstudy.db.retries), or when the
    trial's grid cell already has another trial that is waiting, running or complete (a cell is
    never enqueued twice). The per-evaluation metrics of a journal or gRPC trial stay with the
    failed trial.

    The look at the cell is retried through the storage's outages (StudyStorage.call); any error it
    does not ride out is raised, never read as "the cell has no live trial"."""
    def look() -> tuple[optuna.trial.FrozenTrial, bool]:
        frozen = optuna_private.study_storage(study).get_trial(trial_id)
        return frozen, spec is not None and spec.is_grid and cell_is_live(study, spec, frozen)

    frozen, live = storage.call(look)
    if live:
        return False
    return RetryCallback(max_retry)(study, frozen, interrupted=interrupted,
                                    drop_attrs=(METRICS_ATTR_PREFIX, LEASE_ATTR))


def cell_of_trial(spec: StudySpec, trial: optuna.trial.FrozenTrial) -> CellKey | None:
    """The grid cell of a trial; None only where its parameters definitely name no cell of this
    grid (a parameter missing or a value the space refuses). Any other error is raised."""
    try:
        return spec.space.cell_of(trial_params(trial))
    except (KeyError, UserError):
        return None


def cell_is_live(study: optuna.Study, spec: StudySpec, trial: optuna.trial.FrozenTrial) -> bool:
    """Whether another trial of this trial's grid cell is waiting, running or complete. A trial in
    no cell has none; an error while looking (the database's, a bug's) is raised, not taken as
    "none", which would enqueue a cell twice."""
    key = cell_of_trial(spec, trial)
    if key is None:
        return False
    live = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE)
    return any(optuna_private.trial_id(other) != optuna_private.trial_id(trial) and cell_of_trial(spec, other) == key
               for other in study.get_trials(deepcopy=False, states=live))
