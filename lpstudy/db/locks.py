"""A lock across processes on one storage, for the few steps that must not interleave:

- creating a study and enqueuing its grid (name CREATE_LOCK): two `create` or `replicate` commands
  started at once do one after the other; the first creates the tables, the study and every cell
  once; the second finds the study (same spec: "exists already", nothing enqueued; another spec:
  refused);
- a worker's check of a study's n_trials target and its ask for a new trial (ask_lock_name), so that
  workers never start more trials than the target.

Each storage holds its own (`storage.lock(name)`, lpstudy.db.kinds):

    sqlite:///FILE, journal:///FILE    an exclusive flock on a file FILE.lpstudy-lock* next to it
                                       (lock_file names it)
    postgresql                         a session advisory lock (pg_advisory_lock), released when
                                       the connection ends, also if the process dies
    grpc, mysql                        none (not a LockingStorage): create studies directly on the
                                       database behind the proxy (lpstudy.study.studies waits for a
                                       racing creator's spec)
"""

from __future__ import annotations

from lpstudy.db.asking import ask_lock_name
from lpstudy.db.kinds.base import CREATE_LOCK
from lpstudy.db.kinds.files import lock_file

__all__ = ["CREATE_LOCK", "ask_lock_name", "lock_file"]
