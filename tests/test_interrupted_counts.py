"""A trial a signal stopped (Ctrl-C, SIGTERM) ends FAIL and is enqueued again; its retry is the run
that counts. So no page, `status` nor `studies` counts it as failed; a trial that crashed still is."""

from __future__ import annotations

import json

import optuna
from optuna.trial import TrialState

from lpstudy.db.kinds import open_reader
from lpstudy.db.optuna_storage import open_storage
from lpstudy.results import analysis as A
from lpstudy.results.reading.frames import load_study
from lpstudy.results.status import study_status
from lpstudy.design.spec import build_spec
from lpstudy.study.studies import create_study
from tests.study_helpers import cli


def _planted(url: str) -> None:
    """One COMPLETE trial, one interrupted (FAIL, stopped by a signal) and its WAITING retry, one crash."""
    storage = open_storage(url, create_tables=True)
    study, _ = create_study(storage, "s", build_spec({"preset": "smoke", "spread_trials": 0}))
    for state, attrs in ((TrialState.COMPLETE, {"stopped": False}), (TrialState.FAIL, {"stopped": True, "interrupted": True}),
                         (TrialState.FAIL, {"stopped": False, "error": "RuntimeError"})):
        study.add_trial(optuna.trial.create_trial(state=state, value=2.0 if state == TrialState.COMPLETE else None,
                                                  params={}, distributions={}, user_attrs=attrs))
    study.enqueue_trial({})  # the interrupted trial's retry


def test_an_interrupted_trial_is_not_counted_as_failed_anywhere(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    _planted(url)
    with open_reader(url) as reader:
        counts = study_status(reader, "s")["counts"]  # from SQL (lpstudy.results.reading.summary)
        frame_counts = A.state_counts(load_study(reader, "s", curves=False).trials)  # what the pages show
    assert counts == {"COMPLETE": 1, "PRUNED": 0, "FAIL": 1, "RUNNING": 0, "WAITING": 1}
    assert dict(frame_counts) == counts
    code, out, _ = cli(capsys, "studies", "--storage", url, "--json")
    assert code == 0 and json.loads(out)[0]["counts"] == counts and json.loads(out)[0]["trials"] == 3
