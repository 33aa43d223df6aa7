"""Paths a user hands us, checked before any work starts: a file we will write (`-o`, `--output`),
a folder we will fill (`train --out`), a file we will read (`--config`, `--data`). Each check is
one line (UserError) naming the path and what is wrong with it; none of them creates anything."""

from __future__ import annotations

import os
from pathlib import Path

from lpstudy.errors import UserError


def _path(path: str | os.PathLike, what: str) -> Path:
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise UserError(f"{what}: {text!r} is not a usable path")
    return Path(text).expanduser()


def _kind(path: Path) -> str:
    """'file', 'folder', 'other' or 'missing' (also for a name too long to exist)."""
    try:
        if path.is_dir():
            return "folder"
        if path.exists():
            return "file" if path.is_file() else "other"
    except OSError:
        pass
    return "missing"


def _check_can_make(path: Path, what: str) -> None:
    """The nearest existing ancestor of path must be a folder we can write in."""
    for ancestor in path.absolute().parents:
        kind = _kind(ancestor)
        if kind == "missing":
            continue
        if kind != "folder":
            raise UserError(f"{what} {path}: {ancestor} is a file, not a folder")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise UserError(f"{what} {path}: cannot write in {ancestor}")
        break
    if len(path.name.encode()) > 255:
        raise UserError(f"{what} {path}: the name is longer than a file name can be")


def check_output_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """A file we are about to write (replacing it if it is there)."""
    path = _path(path, what)
    kind = _kind(path)
    if kind == "folder":
        raise UserError(f"{what} {path} is a folder; give a file name")
    if kind == "other":
        raise UserError(f"{what} {path} is not a regular file")
    if kind == "file" and not os.access(path, os.W_OK):
        raise UserError(f"{what} {path} cannot be written")
    _check_can_make(path, what)
    return path


def check_output_dir(path: str | os.PathLike, what: str = "output folder") -> Path:
    """A folder we are about to create (or write into)."""
    path = _path(path, what)
    kind = _kind(path)
    if kind in ("file", "other"):
        raise UserError(f"{what} {path} is a file, not a folder")
    if kind == "folder":
        if not os.access(path, os.W_OK | os.X_OK):
            raise UserError(f"cannot write in {what} {path}")
        return path
    _check_can_make(path, what)
    return path


def check_input_file(path: str | os.PathLike, what: str = "input file") -> Path:
    """A file we are about to read."""
    path = _path(path, what)
    kind = _kind(path)
    if kind == "missing":
        raise UserError(f"{what} {path} does not exist")
    if kind == "folder":
        raise UserError(f"{what} {path} is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise UserError(f"{what} {path} cannot be read")
    return path
