"""A storage's lock across processes, for the few steps that must not interleave, composed into the
storage as an object (`storage.locking`, as Optuna's JournalStorage takes its backend):

- creating a study and enqueuing its grid (name CREATE_LOCK): two `create` or `replicate` commands
  started at once do one after the other; the first creates the tables, the study and every cell
  once; the second finds the study (same spec: "exists already", nothing enqueued; another spec:
  refused);
- a worker's check of a study's n_trials target and its ask for a new trial (ask_lock_name), so that
  workers never start more trials than the target (lpstudy.db.asking).

    sqlite:///FILE, journal:///FILE    FileLock: an exclusive lock (filelock) on a file FILE.lpstudy-lock* next
                                       to it (lock_file names it)
    postgresql                         AdvisoryLock (lpstudy.db.kinds.postgresql): a session advisory
                                       lock, released when the connection ends, also if the process dies
    grpc, mysql                        NoLock: create studies directly on the database behind the
                                       proxy (lpstudy.study.studies waits for a racing creator's spec);
                                       a new trial is checked against the target after it is asked
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lpstudy.db.asking import Wait, ask_lock_name

if TYPE_CHECKING:
    import optuna

CREATE_LOCK = "lpstudy:create"  # the lock `create` and `replicate` hold
LOCK_SUFFIX = ".lpstudy-lock"


class NoLock:
    """No lock across processes: the block runs as it is, and a new trial is asked, then given up
    where it is beyond the target (lpstudy.db.asking)."""

    def hold(self, name: str = CREATE_LOCK) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def ask_within_target(self, study: optuna.Study, target: int) -> optuna.Trial | Literal[Wait.WAIT] | None:
        from lpstudy.db.asking import WAIT, ask_counted, give_up_surplus

        trial = ask_counted(study, target)
        return trial if trial is None or trial is WAIT else give_up_surplus(study, trial, target)


class LockAcrossProcesses(NoLock):
    """A lock that holds across processes (hold(name) says how): the n_trials target is counted and
    a new trial asked under it."""

    def hold(self, name: str = CREATE_LOCK) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def ask_within_target(self, study: optuna.Study, target: int) -> optuna.Trial | Literal[Wait.WAIT] | None:
        from lpstudy.db.asking import ask_counted

        with self.hold(ask_lock_name(study.study_name)):
            return ask_counted(study, target)


def lock_file(path: Path, name: str = CREATE_LOCK) -> Path:
    """The file next to a database file that the lock called name is taken on: FILE.lpstudy-lock for
    the creation lock, FILE.lpstudy-lock-<hash of name> for any other."""
    suffix = "" if name == CREATE_LOCK else "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return Path(f"{path}{LOCK_SUFFIX}{suffix}")


class FileLock(LockAcrossProcesses):
    """An exclusive lock on a file next to the database file (lock_file), taken with the `filelock`
    package (an flock on Unix), the file removed again while it is still held, so that no lock file
    stays beside the database: a process that was waiting on the removed file finds, once it holds
    it, that it has no name left (filelock checks), and takes the lock again on the path's new file
    (the usual way to remove a flock file without two holders at once). prepare makes its folder
    first (lpstudy.db.kinds.files.LocalFile.prepare_to_create)."""

    def __init__(self, path: Callable[[], Path], prepare: Callable[[], object]) -> None:
        self._path, self._prepare = path, prepare

    @contextlib.contextmanager
    def hold(self, name: str = CREATE_LOCK) -> Iterator[None]:
        import filelock

        self._prepare()
        path = lock_file(self._path(), name)
        with filelock.FileLock(path):
            try:
                yield
            finally:  # removed while still held: a waiter that then gets the removed file takes the new one
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
