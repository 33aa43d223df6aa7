"""A lock across processes on one storage, for the few steps that must not interleave:

- creating a study and enqueuing its grid (name LOCK_NAME): two `create` or `replicate` commands
  started at once do one after the other; the first creates the tables, the study and every cell
  once; the second finds the study (same spec: "exists already", nothing enqueued; another spec:
  refused);
- a worker's check of a study's n_trials target and its ask for a new trial (ask_lock_name), so that
  workers never start more trials than the target.

    sqlite:///FILE, journal:///FILE    an exclusive flock on a file FILE.lpstudy-lock* next to it
    postgresql                         a session advisory lock (pg_advisory_lock), released when
                                       the connection ends, also if the process dies
    grpc, mysql                        none: create studies directly on the database behind the proxy
                                       (lpstudy.study.studies waits for a racing creator's spec)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from collections.abc import Iterator

import sqlalchemy as sa

from lpstudy.db.engines import engine_kwargs, first_line
from lpstudy.db.urls import local_file, prepare_to_create, redact, storage_kind
from lpstudy.errors import StudyUnavailable

LOCK_NAME = "lpstudy:create"


def ask_lock_name(study: str) -> str:
    return f"lpstudy:ask:{study}"


def supports_lock(url: str) -> bool:
    return storage_kind(url) in ("sqlite", "journal", "postgresql")


def _advisory_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def storage_lock(url: str, name: str = LOCK_NAME) -> Iterator[None]:
    """Hold the storage's lock called name (see the module) for the duration of the block."""
    kind = storage_kind(url)
    if kind in ("sqlite", "journal"):
        prepare_to_create(url)
        path = local_file(url, creating=True)
        suffix = "" if name == LOCK_NAME else "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
        with open(f"{path}.lpstudy-lock{suffix}", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    if kind == "postgresql":
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool,
                                  **{k: v for k, v in engine_kwargs(url).items() if k != "pool_pre_ping"})
        key = _advisory_key(name)
        try:
            conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        except sa.exc.SQLAlchemyError as exc:
            engine.dispose()
            raise StudyUnavailable(f"cannot open the study database {redact(url)}: {first_line(exc, url)}; "
                                   "check that it is running and reachable, and the URL") from None
        try:
            yield
        finally:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.close()
            engine.dispose()
        return
    yield
