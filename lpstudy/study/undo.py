"""A failed `create` or `replicate` leaves nothing behind: not the database file it made, not the
folders it made for it, not a half-set-up study.

    storage = storage_at(url)
    with undo_on_failure(storage) as undo, storage.lock():
        storage.open(create_tables=True)
        study, created = create_study(storage, name, spec)
        if created:
            undo.study(storage, name)       # deleted again if what follows fails
        enqueue_missing_cells(study, spec, storage)

Only what this command made is removed: a file or folder that was there before stays, and a
study that existed before is never deleted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from typing import TYPE_CHECKING

from lpstudy.db.locking import lock_file

if TYPE_CHECKING:
    from lpstudy.db.kinds.base import StudyStorage



class Undo:
    def __init__(self) -> None:
        self._studies: list[tuple[StudyStorage, str]] = []

    def study(self, storage: StudyStorage, name: str) -> None:
        """The study `name` was created by this command: delete it if the command fails."""
        self._studies.append((storage, name))

    def delete_studies(self) -> None:
        import optuna

        for storage, name in self._studies:
            with contextlib.suppress(Exception):
                optuna.delete_study(study_name=name, storage=storage.optuna)


def _missing_ancestors(path: Path) -> list[Path]:
    """path's folders that do not exist yet, innermost first."""
    missing = []
    for folder in path.absolute().parents:
        if folder.exists():
            break
        missing.append(folder)
    return missing


@contextlib.contextmanager
def undo_on_failure(storage: StudyStorage) -> Iterator[Undo]:
    """What the block makes on the storage (see the module) is removed when it fails."""
    path = storage.local_file(creating=True)
    existed = path is not None and path.exists()
    lock = lock_file(path) if path is not None else None  # the creation lock (lpstudy.db.locking)
    lock_existed = lock is not None and lock.exists()
    folders = _missing_ancestors(path) if path is not None else []
    undo = Undo()
    try:
        yield undo
    except BaseException:
        if path is not None and not existed:
            for made in (path, *(Path(f"{path}{suffix}") for suffix in storage.companions), *([lock] if lock else [])):
                with contextlib.suppress(OSError):
                    made.unlink(missing_ok=True)
            for folder in folders:  # innermost first; only folders left empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
        else:
            undo.delete_studies()
            if lock is not None and not lock_existed:
                with contextlib.suppress(OSError):
                    lock.unlink(missing_ok=True)
        raise
