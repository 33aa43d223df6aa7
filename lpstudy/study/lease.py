"""Heartbeats where Optuna has none: a lease of lpstudy's own on journal and gRPC storages.

Optuna's heartbeats (RDBStorage.record_heartbeat, fail_stale_trials) need a direct SQL connection.
On a journal file or behind the gRPC proxy, a running trial's worker writes the wall-clock time
(Unix seconds) into the trial's system attribute LEASE_ATTR every heartbeat_interval seconds;
before it takes a trial, every worker fails the RUNNING trials whose last beat is older than
grace_period and enqueues each again with its parameters (lpstudy.db.retries.RetryCallback: the
same bookkeeping and max_retry as Optuna's stale-trial callback). Failing a trial is atomic on both
storages (the journal's log and the proxy's database refuse to finish a trial twice), so only one
worker enqueues the retry. The workers' clocks must agree to well within grace_period (NTP).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import optuna
from optuna.trial import TrialState

from lpstudy.db.retries import RetryCallback
from lpstudy.values import LEASE_ATTR, METRICS_ATTR_PREFIX

if TYPE_CHECKING:
    from lpstudy.db.proxy_calls import ProxyCalls

__all__ = ["LEASE_ATTR", "Lease", "last_beat", "running_beats"]  # a beat: StudyStorage.beat


def last_beat(trial: optuna.trial.FrozenTrial) -> float | None:
    value = trial.system_attrs.get(LEASE_ATTR)
    if value is not None:
        return float(value)
    start = trial.datetime_start
    return start.timestamp() if start is not None else None


@dataclass
class Lease:
    interval_s: int
    grace_period_s: int
    max_retry: int | None

    def fail_stale(self, study: optuna.Study, calls: ProxyCalls | None = None) -> list[int]:
        """Fail the RUNNING trials whose lease ran out and enqueue their retries; their numbers.
        calls: lpstudy's storage proxy, which reads the running trials' beats in one query."""
        storage, now, failed = study._storage, time.time(), []
        for trial_id, number, last in running_beats(study, calls):
            if last is None or now - last <= self.grace_period_s:
                continue
            try:
                if not storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
                    continue
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # another worker failed it first, and retries it
            RetryCallback(self.max_retry)(study, storage.get_trial(trial_id),
                                          drop_attrs=(METRICS_ATTR_PREFIX, LEASE_ATTR))
            failed.append(number)
        return failed


def running_beats(study: optuna.Study, calls: ProxyCalls | None = None) -> list[tuple[int, int, float | None]]:
    """(trial id, number, last beat) of the study's RUNNING trials: from lpstudy's storage proxy
    where it offers them, else from Optuna's read of the trials (through Optuna's gRPC client, a
    read of every unfinished trial, a grid's waiting cells included)."""
    beats = calls.running_beats(study._study_id, LEASE_ATTR) if calls is not None else None
    if beats is not None:
        return beats
    return [(t._trial_id, t.number, last_beat(t))
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
