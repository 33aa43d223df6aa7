"""Taking trials from a study: a waiting cell, a new trial within the study's n_trials target, and
a failed trial enqueued again. Each is atomic across workers on every storage (see
docs/exactly-once.md): the storage moves a WAITING trial to RUNNING for one caller only, the
target is counted and asked under the storage's lock, and a cell is enqueued again only while it
has no other live trial."""

from __future__ import annotations

import warnings

import optuna
from optuna.trial import TrialState

from lpstudy.db.locks import ask_lock_name
from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.db.waiting_trials import claim_waiting_trial_id
from lpstudy.db.retries import RetryCallback
from lpstudy.study.lease import LEASE_ATTR
from lpstudy.study.spec import StudySpec
from lpstudy.study.studies import trial_params
from lpstudy.values import METRICS_ATTR_PREFIX


def pop_waiting_trial(study: optuna.Study, storage: StudyStorage | None = None) -> optuna.Trial | None:
    """A WAITING trial, now RUNNING and ours; None when there is none. Atomic across workers: the
    storage moves a trial from WAITING to RUNNING for one caller only (Optuna's
    set_trial_state_values: SELECT ... FOR UPDATE on PostgreSQL, BEGIN IMMEDIATE on SQLite).

    Which trial: on a SQL storage, one of the oldest (lpstudy.db.waiting_trials.claim_waiting_trial_id),
    and through lpstudy's storage proxy the same, run by the proxy (lpstudy.db.proxy_calls).
    Elsewhere (journal, another gRPC proxy) Optuna's own pop, the private Study._pop_waiting_trial_id,
    the first half of study.ask() (ask() would then sample a new trial when no cell waits, and a grid
    worker must stop instead, so there is no public way to pop only); tests/test_optuna_private.py fails if its name,
    signature or behaviour changes. Optuna's pop loads every waiting trial to take the first: with
    1,000 cells waiting, 230 ms a claim on PostgreSQL against 6 ms for claim_waiting_trial_id
    (docs/scale-workers.md)."""
    study._thread_local.cached_all_trials = None  # as Study.ask does: sync with the storage once per trial
    if storage is not None and storage.kind.sql:
        trial_id = claim_waiting_trial_id(storage, study._storage, study._study_id)
    else:
        calls = storage.proxy_calls if storage is not None else None
        claimed = calls.claim_waiting_trial(study._study_id) if calls is not None else None
        trial_id = claimed[0] if claimed is not None else study._pop_waiting_trial_id()
    return None if trial_id is None else optuna.Trial(study, trial_id)


def for_grid_worker(study: optuna.Study, storage: StudyStorage) -> optuna.Study:
    """The study as a grid worker uses it: on a SQL storage, straight on Optuna's RDBStorage rather
    than through the cache that optuna.load_study puts in front of it. The cache makes a sampler's
    reads incremental, and a grid worker never samples; it reads every unfinished trial again on each
    read, and a grid's waiting cells are unfinished trials, so that with 5,000 cells waiting each read
    loaded them all; and it refuses the parameters of a trial it has not loaded, as a trial claimed
    by claim_waiting_trial_id is (KeyError in set_trial_param). Optuna reaches the storage through
    Study._storage only (tests/test_optuna_private.py checks it)."""
    if storage.kind.sql:
        study._storage = storage.optuna
    return study


WAIT = object()  # ask_within_target: the target is taken by running trials; look again later


def ask_within_target(study: optuna.Study, spec: StudySpec, storage: StudyStorage):
    """study.ask(), unless the study's n_trials target is taken: None when that many trials have
    finished (COMPLETE or PRUNED), WAIT when finished and running trials make up the target. The
    count and the ask happen under the storage's lock (lpstudy.db.locks), so several workers never
    start more trials than the target. Without a lock (gRPC, MySQL) a worker that finds its new trial
    beyond the target (a racing worker's trial has a lower number) gives it up: it ends FAIL with
    the user attribute surplus, never run."""
    def ask() -> optuna.Trial:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "heartbeat is supposed to be used with optimize"
            return study.ask()

    if spec.n_trials is None:
        return ask()
    taken = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
    locked = storage.kind.has_lock
    with storage.kind.lock(storage.url, ask_lock_name(study.study_name)):
        trials = study.get_trials(deepcopy=False, states=taken)
        finished = sum(1 for t in trials if t.state != TrialState.RUNNING)
        if finished >= spec.n_trials:
            return None
        if len(trials) >= spec.n_trials:
            return WAIT
        trial = ask()
    if not locked:
        numbers = sorted(t.number for t in study.get_trials(deepcopy=False, states=taken))
        if trial.number in numbers and numbers.index(trial.number) >= spec.n_trials:
            trial.set_user_attr("surplus", True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            return WAIT
    return trial


def count_states(study: optuna.Study, states: tuple[TrialState, ...], storage: StudyStorage | None = None) -> int:
    """How many of the study's trials are in these states: on a SQL storage one count
    (lpstudy.db.trial_states), through lpstudy's storage proxy the same count run by the proxy,
    elsewhere Optuna's read of those trials."""
    names = tuple(s.name for s in states)
    if storage is not None and storage.kind.sql:
        from lpstudy.db.trial_states import count_trials

        def count() -> int:
            with storage.engine.connect() as conn:
                return count_trials(conn, study._study_id, names)

        return storage.call(count)
    if storage is not None and storage.proxy_calls is not None:
        n = storage.proxy_calls.count_trials(study._study_id, names)
        if n is not None:
            return n
    return len(study.get_trials(deepcopy=False, states=states))


def requeue(study: optuna.Study, trial_id: int, max_retry: int, interrupted: bool = False,
            spec: StudySpec | None = None) -> bool:
    """Enqueue a failed trial again with its parameters and user attributes (a new WAITING trial),
    with the same bookkeeping (failed_trial, retry_history) as Optuna's
    RetryHeartbeatStaleTrialCallback for a trial whose worker died; False when a crash has been
    retried max_retry times (an interruption does not count, see lpstudy.db.retries), or when the
    trial's grid cell already has another trial that is waiting, running or complete (a cell is
    never enqueued twice). The per-evaluation metrics of a journal or gRPC trial stay with the
    failed trial."""
    frozen = study._storage.get_trial(trial_id)
    if spec is not None and spec.is_grid and cell_is_live(study, spec, frozen):
        return False
    return RetryCallback(max_retry)(study, frozen, interrupted=interrupted,
                                    drop_attrs=(METRICS_ATTR_PREFIX, LEASE_ATTR))


def cell_is_live(study: optuna.Study, spec: StudySpec, trial: optuna.trial.FrozenTrial) -> bool:
    """Whether another trial of this trial's grid cell is waiting, running or complete."""
    try:
        key = spec.space.cell_of(trial_params(trial))
    except Exception:
        return False
    live = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE)
    for other in study.get_trials(deepcopy=False, states=live):
        if other._trial_id == trial._trial_id:
            continue
        try:
            if spec.space.cell_of(trial_params(other)) == key:
                return True
        except Exception:
            continue
    return False
