"""Every private part of Optuna's objects that lpstudy reads or calls, in this one module: Optuna's
storage API takes ids that its public objects do not show, a grid worker pops a waiting trial without
sampling one, and a grid worker's study skips the cache in front of Optuna's RDBStorage. Each is
checked against the installed Optuna in tests/test_optuna_private.py (Optuna is pinned to 5.x), and
tests/test_house.py keeps any other module from reaching one.

(The private modules lpstudy builds on, optuna.storages._rdb, _cached_storage and _grpc, are
imported where they are used: db/outages.py, db/optuna_storage.py, db/optuna_copy.py.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage


def study_id(study: Any) -> int:
    """The id Optuna's storage knows a Study or a FrozenStudy by (Study._study_id, FrozenStudy._study_id)."""
    return int(study._study_id)


def trial_id(trial: Any) -> int:
    """The id Optuna's storage knows a Trial or a FrozenTrial by (_trial_id)."""
    return int(trial._trial_id)


def study_storage(study: optuna.Study) -> BaseStorage:
    """The storage a study calls (Study._storage: the cache in front of an RDBStorage that
    optuna.load_study puts there, or the storage itself)."""
    return study._storage


def set_study_storage(study: optuna.Study, storage: BaseStorage) -> optuna.Study:
    """The study, calling storage from now on (Optuna reaches its storage through Study._storage only:
    tests/test_optuna_private.py)."""
    study._storage = storage
    return study


def pop_waiting_trial_id(study: optuna.Study) -> int | None:
    """Optuna's own pop: a WAITING trial moved to RUNNING for this caller only, its id, or None (the
    first half of study.ask(), which would then sample a new trial)."""
    return study._pop_waiting_trial_id()


def forget_cached_trials(study: optuna.Study) -> None:
    """As Study.ask does before a trial: the study reads its trials from the storage again once."""
    study._thread_local.cached_all_trials = None
