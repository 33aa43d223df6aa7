"""A study's waiting trials in Optuna's tables: the oldest ones read without loading them (the
candidates of a worker's claim, lpstudy.study.claims), and a grid's cells enqueued in bulk.

Reading: one query on the study's index, however many trials wait; Optuna's own pop loads every
waiting trial (its parameters and attributes) to take the first.

Enqueuing: Optuna's enqueue_trial writes one trial in seven statements (the study's row locked, the
trial inserted as RUNNING, read back, its fixed_params attribute, its state set to WAITING, its
number counted and set): 5,000 cells took 129 s on the two-core machine (60 s of the creator's CPU),
and beside 200 busy workers about 40 a minute, so that the workers waited on the creator for hours.
enqueue_waiting_trials writes the same rows (tests/test_optuna_private.py compares them with
enqueue_trial's) in one transaction: the study's row locked first, as Optuna locks it to number a
trial, so that a trial created at the same time (a worker's retry) never gets a number twice.

Optuna's schema stores a trial's state by name (WAITING), as lpstudy.db.optuna_tables reads it.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lpstudy.db.storage_protocol import sql_engine
from lpstudy.values import FIXED_PARAMS_ATTR

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

    from lpstudy.db.storage_protocol import Storage

# A claim on a SQL storage tries the oldest CLAIM_WINDOW waiting trials in a random order: workers
# that claim at the same moment then rarely reach for the same trial (in order, each would queue on
# the first one's row lock, then the next one's, ...).
CLAIM_WINDOW = 64


def waiting_trial_ids(conn: Connection, study_id: int, limit: int) -> list[int]:
    """The ids of the study's `limit` oldest WAITING trials, oldest first."""
    return [int(trial_id) for (trial_id,) in conn.execute(sa.text(
        "SELECT trial_id FROM trials WHERE study_id = :sid AND state = 'WAITING' ORDER BY trial_id LIMIT :n"),
        {"sid": study_id, "n": limit})]


def claim_waiting_trial_id(storage: Storage, optuna_storage: BaseStorage, study_id: int) -> int | None:
    """Claim one of the oldest waiting trials of a study on a SQL storage: the ids of the oldest
    CLAIM_WINDOW from one query (lpstudy.db.waiting_trials), tried in a random order with the same
    atomic step as Optuna's pop (optuna_storage's set_trial_state_values); read again while others
    took them all first. The trial's id, or None when none waits."""
    def candidates() -> list[int]:
        with sql_engine(storage).connect() as conn:
            return waiting_trial_ids(conn, study_id, CLAIM_WINDOW)

    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    while True:
        ids = storage.call(candidates)
        if not ids:
            return None
        random.shuffle(ids)
        for trial_id in ids:
            try:
                if optuna_storage.set_trial_state_values(trial_id, state=TrialState.RUNNING):
                    return trial_id
            except UpdateFinishedTrialError:
                continue  # another worker took it and finished it since the query


def enqueue_waiting_trials(conn: Connection, study_id: int, params: list[dict[str, Any]]) -> int:
    """Enqueue one WAITING trial per dict of parameters, in order, as Optuna's
    study.enqueue_trial(params) does (the trial numbered next, its parameters in the system
    attribute fixed_params), in the caller's transaction; returns how many. The study's row is
    locked first (a write on SQLite takes the file's write lock at once), so that no other trial
    of the study is numbered meanwhile."""
    if not params:
        return 0
    # the lock Optuna's _create_new_trial takes (SELECT ... FOR UPDATE), portable: a write of the row
    conn.execute(sa.text("UPDATE studies SET study_name = study_name WHERE study_id = :sid"), {"sid": study_id})
    first = int(conn.execute(sa.text("SELECT count(*) FROM trials WHERE study_id = :sid"),
                             {"sid": study_id}).scalar_one())
    conn.execute(sa.text("INSERT INTO trials (number, study_id, state, datetime_start, datetime_complete) "
                         "VALUES (:number, :sid, 'WAITING', NULL, NULL)"),
                 [{"number": first + i, "sid": study_id} for i in range(len(params))])
    ids: dict[int, int] = dict(conn.execute(sa.text("SELECT number, trial_id FROM trials WHERE study_id = :sid AND number >= :first"),
                            {"sid": study_id, "first": first}).all())
    conn.execute(sa.text("INSERT INTO trial_system_attributes (trial_id, key, value_json) VALUES (:tid, :key, :value)"),
                 [{"tid": ids[first + i], "key": FIXED_PARAMS_ATTR, "value": json.dumps(p)}
                  for i, p in enumerate(params)])
    return len(params)
