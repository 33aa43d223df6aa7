"""What the kinds kept in one local file share (SQLite, journal): the file's rules, its lock, its
checkpoints beside it.

File URLs read as SQLite reads its own: three slashes and a relative path (sqlite:///storage/a.db),
four for an absolute one (sqlite:////srv/a.db). Resolving a URL never touches the disk; only
`prepare_to_create` makes the folder of a file that a study is about to be created in.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from lpstudy.db.kinds.base import CREATE_LOCK, LockingStorage
from lpstudy.errors import UserError

LOCK_SUFFIX = ".lpstudy-lock"
ARTIFACTS_SUFFIX = ".artifacts"


def lock_file(path: Path, name: str = CREATE_LOCK) -> Path:
    """The file next to a database file that the lock called name is taken on: FILE.lpstudy-lock for
    the creation lock, FILE.lpstudy-lock-<hash of name> for any other (lpstudy.db.locks)."""
    suffix = "" if name == CREATE_LOCK else "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return Path(f"{path}{LOCK_SUFFIX}{suffix}")


class FileStorage(LockingStorage):
    """A storage kept in one local file (or a file on a shared file system)."""

    def local_file(self, creating: bool = False) -> Path:
        raise NotImplementedError

    def file_problem(self, path: Path) -> str | None:
        """Why an existing file is not a storage of this kind, or None."""
        return None

    def missing_file_message(self) -> str | None:
        path = self.local_file()
        if path.is_dir():
            return f"the storage {self.display_url} names a folder ({path}), not a database file"
        if not path.is_file():
            return (f"no study database at {path}; run a study first (`lpstudy search`, `lpstudy create` or `lpstudy "
                    "replicate`) or pass --storage / set LPSTUDY_STORAGE to the URL the workers use")
        return self.file_problem(path)

    def prepare_to_create(self) -> Path | None:
        """Check that the file can be made, make its folder, and return the folder if it was made now
        (so that a failed create can remove it)."""
        path = self.local_file(creating=True)
        if path.is_dir():
            raise UserError(f"the storage {self.display_url} names a folder ({path}), not a database file")
        made = None
        parent = path.parent
        for ancestor in [parent, *parent.parents]:
            if ancestor.exists():
                if not ancestor.is_dir():
                    raise UserError(f"cannot create {path}: {ancestor} is a file, not a folder")
                break
            made = ancestor
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the folder {parent} for {path}: {exc.strerror}") from None
        if not os.access(parent, os.W_OK):
            raise UserError(f"cannot write in {parent}; pick another --storage")
        return made

    @contextlib.contextmanager
    def lock(self, name: str = CREATE_LOCK) -> Iterator[None]:
        """An exclusive flock on a file next to the database file (lock_file), removed again when
        released, so that no lock file stays beside the database. The holder removes it while it
        still holds the lock; a process that was waiting on the removed file finds, once it holds
        it, that the path no longer names its file, and takes the lock again on the path's new file
        (the usual way to remove a flock file without two holders at once)."""
        self.prepare_to_create()
        path = lock_file(self.local_file(creating=True), name)
        while True:
            with open(path, "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                if not _names(path, handle):  # removed (and perhaps made again) while we waited
                    continue
                try:
                    yield
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    fcntl.flock(handle, fcntl.LOCK_UN)
                return

    def default_artifacts(self) -> str:
        """FILE.artifacts, a folder next to the file."""
        return f"{self.local_file()}{ARTIFACTS_SUFFIX}"


def _names(path: Path, handle) -> bool:
    """Whether `path` still names the open file `handle` (same device and inode)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
