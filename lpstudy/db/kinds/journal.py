"""journal:///FILE: Optuna's journal file, for a shared file system without a database server.

Locks: a flock beside the file. Liveness: lpstudy's lease (no Optuna heartbeats without SQL).
Curves: the trials' system attributes. Checkpoints: FILE.artifacts beside it. No read-only mode:
readers only read.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lpstudy.db.kinds.base import StudyStorage
from lpstudy.db.kinds.files import LocalFile
from lpstudy.db.locking import FileLock
from lpstudy.errors import UserError

if TYPE_CHECKING:
    from optuna.storages import JournalStorage


class JournalFileStorage(StudyStorage):
    name = "journal"
    url_form = "journal:///FILE"
    listed = 3

    def validate(self) -> None:
        self._path()

    @cached_property
    def file(self) -> LocalFile:
        return LocalFile(self.display_url, self._path)

    @cached_property
    def locking(self) -> FileLock:
        return self.file.lock()

    def _path(self, creating: bool = False) -> Path:
        """Read as SQLite reads its URLs (journal:///relative.log, journal:////absolute.log);
        journal:///absolute.log is taken as absolute when that file exists, or when creating it and
        only the absolute folder exists."""
        url = self.url
        rest = url.split("://", 1)[1]
        if not rest.strip("/"):
            raise UserError(f"journal URL {url!r} names no file; use journal:///RELATIVE/PATH or "
                            "journal:////ABSOLUTE/PATH")
        relative = Path(rest[1:] if rest.startswith("/") else rest).expanduser()
        absolute = Path(rest).expanduser()
        if relative.exists() or not absolute.is_absolute():
            return relative
        if absolute.exists():
            return absolute
        if creating and not (relative.parent or Path(".")).is_dir() and absolute.parent.is_dir():
            return absolute
        return relative

    def _open_optuna(self, create_tables: bool) -> JournalStorage:
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        if create_tables:
            self.prepare_to_create()
        path = self.local_file(creating=create_tables)
        try:
            return JournalStorage(JournalFileBackend(str(path)))
        except OSError as exc:
            raise UserError(f"cannot open the journal file {path}: {exc.strerror}") from None

