"""The local file a storage is kept in (SQLite, journal), composed into the storage as an object
(`storage.file`): the file's rules, the folder made for it, its checkpoints beside it. A server's
storage has NoFile.

File URLs read as SQLite reads its own: three slashes and a relative path (sqlite:///storage/a.db),
four for an absolute one (sqlite:////srv/a.db). Resolving a URL never touches the disk; only
`prepare_to_create` makes the folder of a file that a study is about to be created in.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from lpstudy.db.locking import FileLock
from lpstudy.errors import UserError

ARTIFACTS_SUFFIX = ".artifacts"


class NoFile:
    """A server's storage: no local file, nothing to prepare, no default checkpoint store."""

    def path(self, creating: bool = False) -> Path | None:
        return None

    def missing_message(self) -> str | None:
        return None

    def prepare_to_create(self) -> Path | None:
        return None

    def default_artifacts(self) -> str | None:
        return None


class LocalFile(NoFile):
    """The file of the storage at display_url (or one on a shared file system): path(creating) says
    where the kind's URL puts it, problem(path) why an existing file is not of the kind (or None)."""

    def __init__(self, display_url: str, path: Callable[[bool], Path],
                 problem: Callable[[Path], str | None] = lambda path: None) -> None:
        self.display_url, self._path, self._problem = display_url, path, problem

    def path(self, creating: bool = False) -> Path:
        return self._path(creating)

    def missing_message(self) -> str | None:
        """Why the file cannot be read (none there, a folder, not a database of the kind), or None."""
        path = self.path()
        if path.is_dir():
            return f"the storage {self.display_url} names a folder ({path}), not a database file"
        if not path.is_file():
            return (f"no study database at {path}; run a study first (`lpstudy search`, `lpstudy create` or `lpstudy "
                    "replicate`) or pass --storage / set LPSTUDY_STORAGE to the URL the workers use")
        return self._problem(path)

    def prepare_to_create(self) -> Path | None:
        """Check that the file can be made, make its folder, and return the folder if it was made now
        (so that a failed create can remove it)."""
        path = self.path(creating=True)
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

    def default_artifacts(self) -> str:
        """FILE.artifacts, a folder next to the file."""
        return f"{self.path()}{ARTIFACTS_SUFFIX}"

    def lock(self) -> FileLock:
        """The lock across processes of a storage kept in this file: a flock beside it."""
        return FileLock(lambda: self.path(creating=True), self.prepare_to_create)
