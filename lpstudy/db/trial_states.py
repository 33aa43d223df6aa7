"""What a worker asks of a study's trials between two trials, one query each on Optuna's tables,
where Optuna's API would load whole trials (every parameter and attribute, as ORM objects):

    count_trials        how many trials, of some states: RDBStorage.get_n_trials loads every trial
                        it counts (5,000 at the end of a 5,000-cell grid, asked by every idle worker)
    trial_state         one trial's state: get_trial loads the trial, its parameters, values and
                        attributes (six statements)
    may_have_stale      whether a RUNNING trial's heartbeat is older than the grace period: Optuna's
                        stale check (optuna.storages.fail_stale_trials) loads every RUNNING trial
                        with its heartbeat, and each of 200 workers ran it before every trial
    unbeaten_trials     the RUNNING trials with no heartbeat at all: Optuna's stale check skips
                        them, so a worker killed between its claim and its first heartbeat (a few
                        milliseconds, or one interval when that first write failed) left its trial
                        RUNNING for ever and its grid cell never ran
    backdate_heartbeat  give such a trial, seen without a heartbeat for a whole grace period, a
                        heartbeat as old as the grace period: Optuna's stale check then fails it
                        and its retry callback enqueues it again, as for any other dead worker

The heartbeat check is a pre-check only: when it answers yes, the worker runs Optuna's own
fail_stale_trials, which decides and fails atomically per trial as before. It compares as Optuna
does: the database's clock now() against the heartbeat the database stamped, timezone dropped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def count_trials(conn: Connection, study_id: int, states: tuple[str, ...] | None = None) -> int:
    """The study's trials, of these states (Optuna's names: RUNNING, ...) or all."""
    sql = "SELECT count(*) FROM trials WHERE study_id = :sid"
    params: dict[str, Any] = {"sid": study_id}
    if states:
        sql += " AND state IN (" + ", ".join(f":s{i}" for i in range(len(states))) + ")"
        params.update({f"s{i}": s for i, s in enumerate(states)})
    return int(conn.execute(sa.text(sql), params).scalar_one())


def trial_state(conn: Connection, trial_id: int) -> str:
    """The trial's state, by name."""
    return str(conn.execute(sa.text("SELECT state FROM trials WHERE trial_id = :t"), {"t": trial_id}).scalar_one())


def _as_datetime(value: Any) -> datetime:
    """A timestamp as the driver returns it (SQLite: text), without its timezone, as Optuna compares."""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=None)


def may_have_stale(conn: Connection, study_id: int, grace_period_s: float) -> bool:
    """Whether some RUNNING trial of the study has a heartbeat older than grace_period_s, by the
    database's clock (a second's margin: a yes only costs Optuna's own check)."""
    now, oldest = conn.execute(sa.text(
        "SELECT CURRENT_TIMESTAMP, min(h.heartbeat) FROM trials t JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
        "WHERE t.study_id = :sid AND t.state = 'RUNNING'"), {"sid": study_id}).one()
    if oldest is None:
        return False
    return (_as_datetime(now) - _as_datetime(oldest)).total_seconds() > grace_period_s - 1.0


def unbeaten_trials(conn: Connection, study_id: int) -> set[int]:
    """The ids of the study's RUNNING trials that have no heartbeat row."""
    return {int(tid) for (tid,) in conn.execute(sa.text(
        "SELECT t.trial_id FROM trials t LEFT JOIN trial_heartbeats h ON h.trial_id = t.trial_id "
        "WHERE t.study_id = :sid AND t.state = 'RUNNING' AND h.trial_id IS NULL"), {"sid": study_id})}


def backdate_heartbeat(conn: Connection, trial_id: int, age_s: float) -> bool:
    """Write the trial's heartbeat as age_s seconds before the database's now, if it still has none;
    whether it was written. Optuna's heartbeat row (trial_heartbeats, one per trial) as Optuna
    writes it; a worker that beats afterwards moves it to now (RDBStorage.record_heartbeat)."""
    now = _as_datetime(conn.execute(sa.text("SELECT CURRENT_TIMESTAMP")).scalar_one())
    written = conn.execute(sa.text(
        "INSERT INTO trial_heartbeats (trial_id, heartbeat) SELECT :t, :at "
        "WHERE NOT EXISTS (SELECT 1 FROM trial_heartbeats WHERE trial_id = :t)").bindparams(
            sa.bindparam("at", type_=sa.DateTime())), {"t": trial_id, "at": now - timedelta(seconds=age_s)})
    return written.rowcount == 1
