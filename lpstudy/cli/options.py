"""Options that several command modules share (not a command module: it registers nothing)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

StorageFileOpt = Annotated[Optional[str], typer.Option(
    "--storage-file", help="A file holding the storage URL (chmod 600): keeps its password out of the "
                           "process list, where `ps` shows it to every user (default $LPSTUDY_STORAGE_FILE).")]
