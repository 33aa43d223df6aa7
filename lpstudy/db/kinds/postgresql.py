"""postgresql+psycopg://USER:PASSWORD@HOST/DB: many workers on many machines.

Locks: a session advisory lock (pg_advisory_lock), released when the connection ends, also when
the process dies. Liveness: Optuna's heartbeats. Curves: the metrics table. Checkpoints: no default
store (--artifacts). Read-only: sessions with default_transaction_read_only (and, in a deployment,
the read-only role of storage/init).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import sqlalchemy as sa

from lpstudy.db.kinds.base import CONNECT_TIMEOUT_S
from lpstudy.db.kinds.sql import SqlStorage
from lpstudy.db.locking import CREATE_LOCK, LockAcrossProcesses
from lpstudy.db.urls import first_line


def advisory_key(name: str) -> int:
    """The 64-bit key of the advisory lock called name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class AdvisoryLock(LockAcrossProcesses):
    """A session advisory lock on a connection of its own, held for the block: the storage's URL and
    engine options, read when it is taken."""

    def __init__(self, storage: PostgreSQLStorage) -> None:
        self.storage = storage

    @contextlib.contextmanager
    def hold(self, name: str = CREATE_LOCK) -> Iterator[None]:
        storage = self.storage
        url = storage.url
        options = {k: v for k, v in storage.engine_options().items() if k != "pool_pre_ping"}
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool, **options)
        key = advisory_key(name)
        try:
            conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        except sa.exc.SQLAlchemyError as exc:
            from lpstudy.db.outages import unreachable_or_unavailable  # a lost connection: exit status 75

            engine.dispose()
            raise unreachable_or_unavailable(exc)(f"cannot open the study database {storage.display_url}: "
                                                  f"{first_line(exc, url)}; check that it is running and reachable, "
                                                  "and the URL") from None
        try:
            yield
        finally:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.close()
            engine.dispose()


class PostgreSQLStorage(SqlStorage):
    name = "postgresql"
    url_form = "postgresql+psycopg://USER:PASSWORD@HOST/DB"
    listed = 2

    def engine_options(self, readonly: bool = False) -> dict[str, Any]:
        connect_args: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
        if readonly:  # a reader's sessions: no writes, and no JIT (compiling one big pivot of
            # lpstudy.db.study_queries cost more than it saved)
            connect_args["options"] = "-c default_transaction_read_only=on -c jit=off"
        return {**super().engine_options(readonly), "connect_args": connect_args}

    @cached_property
    def locking(self) -> AdvisoryLock:
        return AdvisoryLock(self)
