"""How a dead worker's trial is noticed: the liveness a storage returns (StudyStorage.liveness),
one object a worker uses without asking which it is.

    OptunaHeartbeats   SQL storages: Optuna's heartbeats (RDBStorage.record_heartbeat); a RUNNING
                       trial without one for grace_period_s is failed by Optuna's stale check and
                       enqueued again by its callback (lpstudy.db.retries.RetryCallback)
    Lease              journal and gRPC: lpstudy's own lease, the wall-clock time (Unix seconds) in
                       the trial's system attribute LEASE_ATTR (Optuna's heartbeats need a direct SQL
                       connection); a trial whose last beat is older than grace_period_s is failed
                       and enqueued again with the same bookkeeping and max_retry

Each answers the same three things: how often a running trial's worker beats (interval_s), a beat
(beat), and, before a worker takes a trial, failing the trials whose worker died (fail_stale,
which returns what to tell the user). Failing a trial is atomic on every storage (the database, the
journal's log and the proxy's database refuse to finish a trial twice), so only one worker enqueues
its retry. With the lease the workers' clocks must agree to well within grace_period_s (NTP).
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, cast

from lpstudy.db import optuna_private
from lpstudy.db.storage_protocol import sql_engine
from lpstudy.values import LEASE_ATTR, METRICS_ATTR_PREFIX

if TYPE_CHECKING:
    import optuna
    from optuna.storages import RDBStorage

    from lpstudy.db.storage_protocol import Storage


class Liveness:
    """What every liveness answers (see the module)."""

    note = ""  # said after the worker's first line, where the user should know

    def __init__(self, storage: Storage, interval_s: int, grace_period_s: int, max_retry: int | None) -> None:
        self.storage, self.interval_s, self.grace_period_s, self.max_retry = (
            storage, int(interval_s), int(grace_period_s), max_retry)

    def beat(self, trial_id: int) -> None:
        """Record that the running trial's worker is alive."""
        raise NotImplementedError

    def fail_stale(self, study: optuna.Study) -> list[str]:
        """Fail the RUNNING trials whose worker died and enqueue their retries; what to say of them."""
        raise NotImplementedError


class OptunaHeartbeats(Liveness):
    """Optuna's heartbeats on a SQL storage, its stale check run only when one query finds a heartbeat
    older than the grace period (lpstudy.db.trial_states): Optuna's check loads every RUNNING trial,
    and 200 workers ran it before every trial."""

    def __init__(self, storage: Storage, interval_s: int, grace_period_s: int, max_retry: int | None) -> None:
        from lpstudy.db.retries import RetryCallback

        super().__init__(storage, interval_s, grace_period_s, max_retry)
        rdb = cast("RDBStorage", storage.optuna)  # the SQL kinds' Optuna storage
        rdb.heartbeat_interval, rdb.grace_period = self.interval_s, self.grace_period_s
        callback = RetryCallback(max_retry)  # Optuna's RetryHeartbeatStaleTrialCallback, interruptions free
        rdb.heartbeat_stale_trial_callback = cast(Any, callback)  # Optuna ignores the bool it returns
        rdb.failed_trial_callback = cast(Any, callback)
        # RUNNING trials seen without any heartbeat: trial id -> when this worker first saw it so
        self.unbeaten: dict[int, float] = {}

    def beat(self, trial_id: int) -> None:
        """Optuna's heartbeat (no retry loop: never blocks; the next beat tries again)."""
        from optuna.storages import RDBStorage

        RDBStorage.record_heartbeat(cast(RDBStorage, self.storage.optuna), trial_id)

    def fail_stale(self, study: optuna.Study) -> list[str]:
        """Optuna's stale-trial failing (each trial failed once, its callback retrying it), run when a
        heartbeat is older than the grace period.

        A RUNNING trial without any heartbeat (its worker died between the claim and its first beat)
        is one Optuna's check never fails. `unbeaten` holds them, each with when this worker first saw
        it so, on its own monotonic clock (no two machines' clocks are compared); one still without a
        heartbeat a grace period later gets a heartbeat as old as the grace period, and Optuna's check
        fails and retries it. Optuna says nothing of the trials it failed: nothing to say here."""
        import optuna

        from lpstudy.db.trial_states import may_have_stale, unbeaten_trials

        def look() -> tuple[bool, set[int]]:
            with sql_engine(self.storage).connect() as conn:
                return may_have_stale(conn, optuna_private.study_id(study), self.grace_period_s), unbeaten_trials(conn, optuna_private.study_id(study))

        stale, without = self.storage.call(look)
        if self._backdate_unbeaten(without):
            stale = True
        if stale:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                optuna.storages.fail_stale_trials(study)
        return []

    def _backdate_unbeaten(self, without: set[int]) -> bool:
        """Note the trials seen without a heartbeat (forget those that have one now or ended); give
        those seen so for longer than the grace period a heartbeat that old; whether any got one."""
        import sqlalchemy as sa

        from lpstudy.db.trial_states import backdate_heartbeat

        now = time.monotonic()
        for trial_id in set(self.unbeaten) - without:
            del self.unbeaten[trial_id]
        for trial_id in without:
            self.unbeaten.setdefault(trial_id, now)
        due = [trial_id for trial_id, seen in self.unbeaten.items() if now - seen > self.grace_period_s]
        backdated = False
        for trial_id in due:
            del self.unbeaten[trial_id]

            def backdate(trial_id: int = trial_id) -> bool:
                with sql_engine(self.storage).begin() as conn:
                    return backdate_heartbeat(conn, trial_id, self.grace_period_s + 1.0)

            try:
                backdated = self.storage.call(backdate) or backdated
            except sa.exc.IntegrityError:  # its worker beat at that very moment: alive after all
                pass
        return backdated


class Lease(Liveness):
    """lpstudy's lease in a trial system attribute, where Optuna has no heartbeats (see the module)."""

    note = " · heartbeats by lease (trial system attribute)"

    def beat(self, trial_id: int) -> None:
        self.storage.optuna.set_trial_system_attr(trial_id, LEASE_ATTR, time.time())

    def fail_stale(self, study: optuna.Study) -> list[str]:
        import optuna
        from optuna.trial import TrialState

        from lpstudy.db.retries import RetryCallback

        storage, now, said = optuna_private.study_storage(study), time.time(), []
        for trial_id, number, last in running_beats(study, self.storage.proxy_calls):
            if last is None or now - last <= self.grace_period_s:
                continue
            try:
                if not storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # another worker failed it first, and retries it
            RetryCallback(self.max_retry)(study, storage.get_trial(trial_id),
                                          drop_attrs=(METRICS_ATTR_PREFIX, LEASE_ATTR))
            said.append(f"trial {number} lost its worker (no heartbeat for {self.grace_period_s} s): "
                        "failed, and enqueued again")
        return said


def last_beat(trial: optuna.trial.FrozenTrial) -> float | None:
    """A trial's last lease beat (Unix seconds), else its start."""
    value = trial.system_attrs.get(LEASE_ATTR)
    if value is not None:
        return float(value)
    start = trial.datetime_start
    return start.timestamp() if start is not None else None


def running_beats(study: optuna.Study, calls: Any = None) -> list[tuple[int, int, float | None]]:
    """(trial id, number, last beat) of the study's RUNNING trials: from lpstudy's storage proxy
    where it offers them (calls: lpstudy.db.proxy_calls.ProxyCalls), else from Optuna's read of the
    trials (through Optuna's gRPC client, a read of every unfinished trial, a grid's waiting cells
    included)."""
    from optuna.trial import TrialState

    beats: list[tuple[int, int, float | None]] | None = (
        calls.running_beats(optuna_private.study_id(study), LEASE_ATTR) if calls is not None else None)
    if beats is not None:
        return beats
    return [(optuna_private.trial_id(t), t.number, last_beat(t))
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
