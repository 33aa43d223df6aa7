"""An expensive fixture (a study trained by real worker processes) built once per test run.

In one pytest process a session-scoped fixture is built once. Under pytest-xdist (the slow tier's
`-n 3`) each worker is a session of its own, and a module's tests are spread over the workers: a
session or module fixture was built by every worker that ran one of its tests, up to three times
the same minutes of training. `once_per_run` builds it once for the whole run: the first worker to
ask builds it in the run's shared temporary folder (the parent of every worker's own) while the
others wait on a lock, then read what it wrote: the folder, and the fixture's value, pickled.

What is built there is shared by processes that run at the same time: tests read it and never
write into its folder (a test's own files go to its tmp_path)."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """build(folder) once per test run; its value (picklable) returned to every process that asks.
    Not under xdist: build(a fresh folder), as a fixture would. A build that fails leaves nothing
    behind: the next process to ask builds again (and fails the same way, in its own test)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build(tmp_path_factory.mktemp(name))
    run = tmp_path_factory.getbasetemp().parent  # shared by the run's workers: pytest-N/popen-gwK's parent
    folder, value = run / f"once-{name}", run / f"once-{name}.pickle"
    with open(run / f"once-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if value.is_file():
                return pickle.loads(value.read_bytes())
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half way
            folder.mkdir()
            built = build(folder)
            value.write_bytes(pickle.dumps(built))
            return built
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
