"""The oldest waiting trials of a study, read from Optuna's trials table without loading them: the
candidates of a worker's claim (lpstudy.study.claims). One query on the study's index, however many
trials wait; Optuna's own pop loads every waiting trial (its parameters and attributes) to take the
first. Optuna's schema stores a trial's state by name (WAITING), as lpstudy.db.optuna_tables reads it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def waiting_trial_ids(conn: Connection, study_id: int, limit: int) -> list[int]:
    """The ids of the study's `limit` oldest WAITING trials, oldest first."""
    return [int(trial_id) for (trial_id,) in conn.execute(sa.text(
        "SELECT trial_id FROM trials WHERE study_id = :sid AND state = 'WAITING' ORDER BY trial_id LIMIT :n"),
        {"sid": study_id, "n": limit})]
