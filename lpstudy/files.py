"""Files the user hands us and files we hand back: YAML mappings read with one-line errors, and
writes that are atomic (a temporary file beside the target, renamed into place), so that a crash
leaves the old file or the new one, never half of one. A written file gets the mode any other
program's would (0666 less the umask): a report written to share is readable by whom the umask
allows, not only by its writer."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import yaml

from lpstudy.errors import UserError


def read_yaml_mapping(path: str | Path, what: str, expected: str) -> dict[str, Any]:
    """The mapping in a YAML (or JSON) file; UserError naming `what` (e.g. "study file") for a
    missing, unreadable, malformed or non-mapping file. `expected` describes the mapping's keys."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None
    except ValueError:  # a NUL byte in the path
        raise UserError(f"{what} {str(path)!r} is not a usable path") from None
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UserError(f"{what} {path} is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{what} {path} must hold a mapping ({expected}), got {type(data).__name__}")
    return dict(data)


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux's
    /proc/self/status); elsewhere set and restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> Path:
    """Call write(fh) on a temporary file beside path, then rename it into place, with the mode
    0666 less the umask (mkstemp makes its file 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            os.fchmod(fh.fileno(), 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))
