"""Deleting a study: Optuna's rows (optuna.delete_study: the study, its trials, their attributes)
and lpstudy's own (the study's rows of the metrics table, on the SQL kinds), refused while its
trials run unless forced. Every kind of storage (a journal file and the gRPC proxy too: their curves
are the trials' attributes, deleted with them)."""

from __future__ import annotations

from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.errors import UserError
from lpstudy.names import no_such_study, shell_quoted


@dataclass(frozen=True)
class Deleted:
    trials: int
    metric_rows: int


def running_trials(storage: StudyStorage, name: str) -> int:
    """How many trials of the study are RUNNING; UserError (with close names) where there is no such study."""
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:
        names = [s.study_name for s in storage.optuna.get_all_studies()]
        raise UserError(no_such_study(name, storage.display_url, names)) from None
    return len(storage.optuna.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)))


def delete_study(storage: StudyStorage, name: str, force: bool = False, hint: str = "") -> Deleted:
    """Delete study `name` with every row lpstudy wrote for it. Refused (UserError) while a trial
    runs, unless `force`: a worker on it would fail writing to a study that is gone."""
    running = running_trials(storage, name)
    if running and not force:
        raise UserError(f"study {name!r} has {running} running trial(s); stop its workers first (or, if they are "
                        f"gone, give --force): lpstudy status --study {shell_quoted(name)}{hint} shows who runs them")
    study_id = storage.optuna.get_study_id_from_name(name)
    n_trials = len(storage.optuna.get_all_trials(study_id, deepcopy=False))
    storage.call(optuna.delete_study, study_name=name, storage=storage.optuna)
    return Deleted(n_trials, storage.delete_curves(name))
