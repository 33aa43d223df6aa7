"""Trials that resume: a trial's checkpoints in Optuna's artifact store (optuna.artifacts).

Every `checkpoint_interval` evaluations (a study spec field) the worker uploads the run's checkpoint
(lpstudy.training.checkpoint: model, optimiser, data sampler position, step, RNG states, the
summary so far) with optuna.artifacts.upload_artifact, so optuna-dashboard lists it with the trial,
and points the trial's system attribute CHECKPOINT_ATTR at it; the previous one is removed. A
retry of the trial (an interrupted worker's, or a dead one's after the grace period) inherits the
system attributes (lpstudy.db.retries), loads the checkpoint and carries on from its step. When a
trial completes (or is pruned) its checkpoint is removed.

Where the store is: --artifacts / LPSTUDY_ARTIFACTS (a folder every worker sees, or s3://BUCKET
for Boto3ArtifactStore: S3 or MinIO, configured by boto3's environment, AWS_ENDPOINT_URL for
MinIO); by default a folder next to a SQLite or journal file (FILE.artifacts). A PostgreSQL or
gRPC storage has no default: without --artifacts its trials restart from step 0.

A retry whose checkpoint is gone (removed by hand, a new store) starts from step 0; one whose
checkpoint the store holds but will not give (an S3 authorisation error) or that is no checkpoint
fails (CheckpointUnreadable, with what to check) and is enqueued again, up to max_retry times.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna

from lpstudy.db import optuna_private
from lpstudy.db.urls import first_line
from lpstudy.errors import UserError
from lpstudy.study.trial_context import TrialLost

if TYPE_CHECKING:
    from optuna.artifacts import Boto3ArtifactStore, FileSystemArtifactStore

    from lpstudy.db.kinds.base import StudyStorage
    from lpstudy.training.checkpoint import Checkpoint

ARTIFACTS_ENV = "LPSTUDY_ARTIFACTS"
CHECKPOINT_ATTR = "lpstudy_checkpoint"


def artifact_location(storage: StudyStorage, location: str | None = None) -> str | None:
    """Where the checkpoints of this storage's trials go (see the module); None: nowhere."""
    location = location or os.environ.get(ARTIFACTS_ENV) or None
    return location or storage.default_artifacts()


def artifact_store(location: str) -> Boto3ArtifactStore | FileSystemArtifactStore:
    """Optuna's artifact store at location: s3://BUCKET, else a folder (made if missing)."""
    from optuna.artifacts import Boto3ArtifactStore, FileSystemArtifactStore

    if location.startswith("s3://"):
        bucket = location[5:].strip("/")
        if not bucket or "/" in bucket:
            raise UserError(f"--artifacts {location!r}: give s3://BUCKET")
        try:
            return Boto3ArtifactStore(bucket)
        except ImportError:
            raise UserError("an s3:// artifact store needs boto3: pip install boto3") from None
    folder = Path(location).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot make the artifact folder {folder}: {exc.strerror}") from None
    return FileSystemArtifactStore(str(folder))


class CheckpointUnreadable(TrialLost):
    """A trial's checkpoint is in the store but cannot be read: its trial fails and is enqueued again
    (lpstudy.study.worker), as the trial of a worker that died."""


class TrialCheckpoints:
    """The checkpoints of one trial (see the module)."""

    def __init__(self, store: Any, study: optuna.Study, trial: optuna.Trial) -> None:
        self.store, self.study, self.trial = store, study, trial
        self.current: str | None = None  # the artifact the trial's attribute points at

    def _meta(self) -> dict[str, Any] | None:
        return optuna_private.study_storage(self.study).get_trial(optuna_private.trial_id(self.trial)).system_attrs.get(CHECKPOINT_ATTR)

    def load(self) -> Checkpoint | None:
        """The checkpoint this trial inherited from the run it retries; None where there is none (no
        checkpoint was saved, or the store no longer holds it: the trial starts from step 0).
        CheckpointUnreadable where the store holds it but it cannot be read (the store refused
        access, as S3 does without credentials, or the bytes are no checkpoint): the trial fails
        with that message and is enqueued again as a trial whose worker died, rather than silently
        training from step 0 what a checkpoint already holds."""
        from optuna.artifacts.exceptions import ArtifactNotFound

        from lpstudy.training.checkpoint import Checkpoint

        meta = self._meta()
        if not meta:
            return None
        self.current = meta.get("artifact_id")
        try:
            with self.store.open_reader(self.current) as reader:
                data = reader.read()
        except ArtifactNotFound:
            self.current = None
            return None
        except Exception as exc:
            raise CheckpointUnreadable(self._unreadable(f"the store refused it ({type(exc).__name__}: "
                                                        f"{first_line(exc)})")) from exc
        try:
            return Checkpoint.from_bytes(data)
        except Exception as exc:
            raise CheckpointUnreadable(self._unreadable(f"its {len(data)} bytes are no checkpoint "
                                                        f"({type(exc).__name__}: {first_line(exc)})")) from exc

    def _unreadable(self, why: str) -> str:
        return (f"trial {self.trial.number}'s checkpoint {self.current} (step {(self._meta() or {}).get('step')}) "
                f"cannot be read: {why}; the trial is enqueued again (max_retry). Check the artifact store "
                f"(--artifacts, {ARTIFACTS_ENV}; for s3://, boto3's credentials)")

    def save(self, checkpoint: Checkpoint) -> None:
        from optuna.artifacts import upload_artifact

        with tempfile.NamedTemporaryFile(prefix=f"lpstudy-trial{self.trial.number}-step{checkpoint.step}-",
                                         suffix=".pt", delete=False) as handle:
            handle.write(checkpoint.to_bytes())
        try:
            artifact_id = upload_artifact(artifact_store=self.store, file_path=handle.name,
                                          study_or_trial=self.trial, mimetype="application/octet-stream")
        finally:
            os.unlink(handle.name)
        optuna_private.study_storage(self.study).set_trial_system_attr(optuna_private.trial_id(self.trial), CHECKPOINT_ATTR,
                                                  {"artifact_id": artifact_id, "step": checkpoint.step})
        previous, self.current = self.current, artifact_id
        self._remove(previous)

    def finish(self) -> None:
        """The trial is over and will not be retried: its checkpoint goes."""
        self._remove(self.current or (self._meta() or {}).get("artifact_id"))
        self.current = None

    def _remove(self, artifact_id: str | None) -> None:
        if artifact_id:
            try:
                self.store.remove(artifact_id)
            except Exception:
                pass  # gone already
