"""sqlite:///FILE: one file on one machine, a few workers; the default (storage/lpstudy.db).

Locks: a flock beside the file. Liveness: Optuna's heartbeats. Curves: the metrics table.
Checkpoints: FILE.artifacts beside it. Read-only: SQLite's own mode=ro (never creates the file).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from lpstudy.db.kinds.files import LocalFile
from lpstudy.db.kinds.sql import SqlStorage
from lpstudy.db.locking import FileLock
from lpstudy.errors import UserError

SQLITE_BUSY_TIMEOUT_S = 60  # a writer waits this long for another's transaction on one SQLite file
SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """Whether path is a SQLite database (its 16-byte header; an empty file is an empty database)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return head in (b"", SQLITE_HEADER)


def serialize_sqlite_writes(engine: Engine) -> Engine:
    """Make every transaction of a SQLite writer engine take the database's write lock when it begins
    (BEGIN IMMEDIATE), so that a SELECT and the UPDATE that follows it are atomic across processes.

    Optuna claims a WAITING trial with SELECT ... FOR UPDATE, then sets it RUNNING. SQLite has no
    FOR UPDATE, and Python's sqlite3 driver begins a transaction only at the first write, so two
    processes could both read WAITING and both write RUNNING: two workers ran one grid cell.
    SQLAlchemy's documented pysqlite recipe ("Serializable isolation / Savepoints / Transactional
    DDL"): the driver's own transaction handling off, and BEGIN IMMEDIATE on every begin. Existing
    pooled connections are dropped, so that every connection from now on has the listeners."""
    if getattr(engine, "_lpstudy_serialized", False):
        return engine

    @sa.event.listens_for(engine, "connect")
    def _driver_autocommit(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None  # pysqlite emits no BEGIN of its own

    @sa.event.listens_for(engine, "begin")
    def _begin_immediate(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    engine.dispose()
    setattr(engine, "_lpstudy_serialized", True)  # read above: listeners added once per engine
    return engine


class SQLiteStorage(SqlStorage):
    name = "sqlite"
    url_form = "sqlite:///FILE"
    listed = 1
    companions = ("-journal", "-wal", "-shm")  # its rollback journal, write-ahead log, shared memory

    def validate(self) -> None:
        super().validate()
        url = self.display_url
        parsed = make_url(self.url)
        if parsed.host:  # sqlite://storage/x.db: 'storage' read as a host, the file as x.db
            raise UserError(f"storage URL {url!r} has two slashes: a SQLite file takes three "
                            f"(sqlite:///{parsed.host}/{parsed.database or ''}), four for an absolute path (sqlite:////PATH)")
        database = parsed.database
        if not database or database == ":memory:" or database.startswith("file::memory:"):
            raise UserError(f"storage URL {url!r} names no file (an in-memory database is lost "
                            "when the command ends); use sqlite:///PATH/TO/FILE.db")

    @cached_property
    def file(self) -> LocalFile:
        return LocalFile(self.display_url, lambda creating: Path(cast(str, make_url(self.url).database)).expanduser(),  # validate: a file
                         lambda path: None if is_sqlite_file(path) else
                         f"{path} is not a SQLite database; check --storage / LPSTUDY_STORAGE")

    @cached_property
    def locking(self) -> FileLock:
        return self.file.lock()

    def readonly_url(self) -> str:
        return f"sqlite:///file:{cast(Path, self.local_file()).resolve()}?mode=ro&uri=true"

    def engine_options(self, readonly: bool = False) -> dict[str, Any]:
        return {**super().engine_options(readonly), "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}}

    def writer_engine(self, engine: Engine) -> Engine:
        return serialize_sqlite_writes(engine)

