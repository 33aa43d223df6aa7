"""Deleting a study: Optuna's rows (optuna.delete_study: the study, its trials, their attributes)
and lpstudy's own (the study's rows of the metrics table, on the SQL kinds), refused while its
trials run unless forced. Every kind of storage (a journal file and the gRPC proxy too: their curves
are the trials' attributes, deleted with them). The checkpoints its trials left in a folder artifact
store (lpstudy.study.checkpoints: FILE.artifacts next to a SQLite or journal file by default, or
LPSTUDY_ARTIFACTS) go too; an s3:// store is left as it is. A comparison (`lpstudy compare`) goes
with its arms' studies (NAME:ARM:tune, NAME:ARM:folds), where its trials are: its own study holds none."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import optuna
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.errors import UserError
from lpstudy.names import arm_study_names, no_such_study, shell_quoted


@dataclass(frozen=True)
class Deleted:
    trials: int
    metric_rows: int
    checkpoints: int = 0
    studies: int = 1  # the study and, for a comparison, its arms' studies


def running_trials(storage: StudyStorage, name: str) -> int:
    """How many trials of the study are RUNNING; UserError (with close names) where there is no such study."""
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:
        names = [s.study_name for s in storage.optuna.get_all_studies()]
        raise UserError(no_such_study(name, storage.display_url, names)) from None
    return len(storage.optuna.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)))


def studies_of(storage: StudyStorage, name: str) -> list[str]:
    """The studies that deleting `name` removes: itself and, for a comparison, its arms' studies
    (arms first, so that a comparison interrupted half-deleted is still found by its name)."""
    from lpstudy.study.compare import COMPARE_ATTR

    study_id = storage.optuna.get_study_id_from_name(name)
    if not storage.optuna.get_study_user_attrs(study_id).get(COMPARE_ATTR):
        return [name]
    return [*arm_study_names(name, [s.study_name for s in storage.optuna.get_all_studies()]), name]


def delete_study(storage: StudyStorage, name: str, force: bool = False, hint: str = "") -> Deleted:
    """Delete study `name` (a comparison with its arms' studies) with every row lpstudy wrote for it.
    Refused (UserError) while a trial runs, unless `force`: a worker on it would fail writing to a
    study that is gone."""
    names = studies_of(storage, name) if running_trials(storage, name) is not None else []
    running = sum(running_trials(storage, n) for n in names)
    if running and not force:
        raise UserError(f"study {name!r} has {running} running trial(s); stop its workers first (or, if they are "
                        f"gone, give --force): lpstudy status --study {shell_quoted(name)}{hint} shows who runs them")
    trials = metric_rows = checkpoints = 0
    for each in names:
        study_trials = storage.optuna.get_all_trials(storage.optuna.get_study_id_from_name(each), deepcopy=False)
        storage.call(optuna.delete_study, study_name=each, storage=storage.optuna)
        trials += len(study_trials)
        metric_rows += storage.delete_curves(each)
        checkpoints += delete_checkpoints(storage, study_trials)
    return Deleted(trials, metric_rows, checkpoints, len(names))


def delete_checkpoints(storage: StudyStorage, trials: list[optuna.trial.FrozenTrial]) -> int:
    """Remove the checkpoints these trials point at (CHECKPOINT_ATTR) from the storage's artifact
    folder, where it is a folder that exists; how many were there."""
    from optuna.artifacts import FileSystemArtifactStore
    from optuna.artifacts.exceptions import ArtifactNotFound

    from lpstudy.study.checkpoints import CHECKPOINT_ATTR, artifact_location

    location = artifact_location(storage)
    if location is None or location.startswith("s3://") or not Path(location).expanduser().is_dir():
        return 0
    store = FileSystemArtifactStore(str(Path(location).expanduser()))
    removed = 0
    for trial in trials:
        artifact_id = (trial.system_attrs.get(CHECKPOINT_ATTR) or {}).get("artifact_id")
        if artifact_id:
            try:
                store.remove(artifact_id)
                removed += 1
            except ArtifactNotFound:
                pass  # removed when its trial finished, or by hand
    return removed
