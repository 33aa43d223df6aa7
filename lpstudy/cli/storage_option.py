"""The storage options every command that opens a study takes (--storage, --storage-file), declared
once: the URL they resolve to, and how a message tells the user to name the same storage again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Optional

import typer

from lpstudy.cli.option_groups import OptionGroup

StorageOpt = Annotated[Optional[str], typer.Option(
    "--storage", help="Study database URL: sqlite:///FILE, postgresql+psycopg://USER:PW@HOST/DB, "
                      "journal:///FILE or grpc://HOST:PORT (default $LPSTUDY_STORAGE, else sqlite:///storage/lpstudy.db).")]
StorageFileOpt = Annotated[Optional[str], typer.Option(
    "--storage-file", help="A file holding the storage URL (chmod 600): keeps its password out of the "
                           "process list, where `ps` shows it to every user (default $LPSTUDY_STORAGE_FILE).")]


@dataclass(frozen=True)
class StorageChoice(OptionGroup):
    """--storage and --storage-file as given (None: not given)."""

    storage: StorageOpt = None
    storage_file: StorageFileOpt = None

    def url(self) -> str:
        """The storage URL: --storage, else --storage-file's, else $LPSTUDY_STORAGE, else
        $LPSTUDY_STORAGE_FILE's, else the default file (lpstudy.db.urls.storage_url)."""
        from lpstudy.db.urls import storage_url

        return storage_url(self.storage, self.storage_file)

    def checked_storage(self):
        """The storage at url() (lpstudy.db.kinds.base.StudyStorage), its URL checked by its kind's
        rules (a port that is a number, no unencoded '@' in a password, ...), nothing opened yet."""
        from lpstudy.db.kinds import storage_at

        return storage_at(self.url())

    def reader(self):
        """The study database's one storage object for reading (lpstudy.db.trial_reader), made from
        url(), which its kind checks there, once; a command makes it once and passes it to what
        reads (`with storage.reader() as reader:`)."""
        from lpstudy.db.kinds import open_reader

        return open_reader(self.url())

    @property
    def hint(self) -> str:
        """The storage as a command this one suggests should name it, never with its password:
        ' --storage URL', ' --storage-file FILE' (the file given), or '' for the default storage."""
        if self.storage:
            return " --storage URL"
        if self.storage_file:
            from lpstudy.names import shell_quoted

            return f" --storage-file {shell_quoted(self.storage_file)}"
        return ""
