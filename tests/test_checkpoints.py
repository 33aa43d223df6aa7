"""A retry's checkpoint: gone from the store, the trial starts from step 0; in the store but
unreadable (an S3 authorisation error, bytes that are no checkpoint), the trial fails with a message
that says what to check and is enqueued again, as the trial of a worker that died, instead of
training from step 0 in silence."""

from __future__ import annotations

import io

import optuna
import pytest
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import open_storage
from lpstudy.study.checkpoints import CHECKPOINT_ATTR, CheckpointUnreadable, TrialCheckpoints, artifact_store
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import create_study

optuna.logging.set_verbosity(optuna.logging.WARNING)


class RefusingStore:
    """An S3 store without credentials: every read is refused as boto3 refuses it."""

    def open_reader(self, artifact_id):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject")

    def remove(self, artifact_id):
        pass


class JunkStore:
    def open_reader(self, artifact_id):
        return io.BytesIO(b"not a checkpoint")

    def remove(self, artifact_id):
        pass


def _study(tmp_path, max_retry: int = 2):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    storage = open_storage(url, create_tables=True)
    spec = StudySpec.from_plain({"preset": "smoke", "sampler": "random", "pruner": "none", "max_retry": max_retry,
                                 "checkpoint_interval": 1})
    study, _ = create_study(storage, "c", spec)
    return url, storage, study


def _retry_with_checkpoint(study, step: int = 40) -> optuna.Trial:
    trial = study.ask()
    study._storage.set_trial_system_attr(trial._trial_id, CHECKPOINT_ATTR, {"artifact_id": "a1b2", "step": step})
    return trial


def test_a_checkpoint_gone_from_the_store_restarts_the_trial(tmp_path):
    _, storage, study = _study(tmp_path)
    trial = _retry_with_checkpoint(study)
    store = artifact_store(str(tmp_path / "artifacts"))  # an empty folder: the artifact is not there
    assert TrialCheckpoints(store, study, trial).load() is None
    assert TrialCheckpoints(store, study, study.ask()).load() is None  # no checkpoint at all
    storage.close()


@pytest.mark.parametrize("store, why", [(RefusingStore(), r"the store refused it \(ClientError: .*AccessDenied"),
                                        (JunkStore(), r"its 16 bytes are no checkpoint")])
def test_an_unreadable_checkpoint_fails_the_trial_with_what_to_check(tmp_path, store, why):
    _, storage, study = _study(tmp_path)
    trial = _retry_with_checkpoint(study)
    with pytest.raises(CheckpointUnreadable, match=rf"trial 0's checkpoint a1b2 \(step 40\) cannot be read: {why}.*"
                                                   r"enqueued again.*--artifacts, LPSTUDY_ARTIFACTS"):
        TrialCheckpoints(store, study, trial).load()
    storage.close()


def test_a_worker_fails_a_trial_whose_checkpoint_is_refused_and_enqueues_it_again(tmp_path):
    """Not a grid, and still retried (as a dead worker's trial is), with its parameters and its
    checkpoint, until max_retry is used up."""
    from lpstudy.study.trial_context import TrialOutcome
    from lpstudy.study.worker import WorkerOptions, run_worker

    url, storage, study = _study(tmp_path, max_retry=1)
    seen = []

    def objective(ctx, trial) -> TrialOutcome:
        ctx.spec.space.suggest(trial)
        seen.append((trial.number, dict(trial.params)))
        if trial.number == 0:  # the first run saved a checkpoint before its worker died
            ctx.study._storage.set_trial_system_attr(trial._trial_id, CHECKPOINT_ATTR, {"artifact_id": "a1b2", "step": 40})
        TrialCheckpoints(RefusingStore(), ctx.study, trial).load()
        return TrialOutcome(TrialState.COMPLETE, 1.0)

    said: list[str] = []
    report = run_worker(WorkerOptions(study="c", storage=url, device="cpu", show_progress=False, n_trials=3),
                        say=said.append, objective=objective, storage=storage)
    trials = study.get_trials(deepcopy=False)
    assert [t.state for t in trials[:3]] == [TrialState.FAIL, TrialState.FAIL, TrialState.COMPLETE], said
    assert seen[1][1] == seen[0][1]  # trial 1 is trial 0's retry: the same parameters
    assert trials[1].system_attrs["failed_trial"] == 0
    assert trials[1].system_attrs[CHECKPOINT_ATTR]["artifact_id"] == "a1b2"  # it tried the checkpoint again
    assert "AccessDenied" in trials[0].user_attrs["error"]
    assert sum("enqueued again with the same parameters" in m for m in said) == 1  # max_retry=1: once
    assert report.trials == {"FAIL": 2, "COMPLETE": 1}
    storage.close()
