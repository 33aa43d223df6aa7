"""SQLAlchemy engines for a study database, with one set of options for every command.

readonly=True gives an engine that cannot write: SQLite opened with mode=ro (which never creates
the file either), PostgreSQL sessions with default_transaction_read_only (and, in a deployment,
the read-only role of storage/init). Writers get SQLite's busy timeout, so that a few workers on
one file wait for each other's transactions instead of failing, and serialised transactions
(serialize_sqlite_writes), so that a read-then-write such as Optuna's WAITING -> RUNNING claim is
atomic across processes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lpstudy.db.urls import missing_file_message, password_of, readonly_url, redact, storage_kind
from lpstudy.errors import StudyUnavailable, UserError

CONNECT_TIMEOUT_S = 5  # an unreachable server fails within this many seconds
SQLITE_BUSY_TIMEOUT_S = 60  # a writer waits this long for another's transaction on one SQLite file


def engine_kwargs(url: str, readonly: bool = False) -> dict[str, Any]:
    """create_engine's options for url: the same for Optuna's RDBStorage and for lpstudy's reads."""
    kind = storage_kind(url)
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if kind == "sqlite":
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S}
    elif kind == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        if readonly:
            kwargs["connect_args"]["options"] = "-c default_transaction_read_only=on"
    elif kind == "mysql":
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        kwargs["pool_recycle"] = 3600
    return kwargs


def serialize_sqlite_writes(engine: Engine) -> Engine:
    """Make every transaction of a SQLite writer engine take the database's write lock when it begins
    (BEGIN IMMEDIATE), so that a SELECT and the UPDATE that follows it are atomic across processes.

    Optuna claims a WAITING trial with SELECT ... FOR UPDATE, then sets it RUNNING. SQLite has no
    FOR UPDATE, and Python's sqlite3 driver begins a transaction only at the first write, so two
    processes could both read WAITING and both write RUNNING: two workers ran one grid cell.
    SQLAlchemy's documented pysqlite recipe ("Serializable isolation / Savepoints / Transactional
    DDL"): the driver's own transaction handling off, and BEGIN IMMEDIATE on every begin. Existing
    pooled connections are dropped, so that every connection from now on has the listeners."""
    if engine.dialect.name != "sqlite" or getattr(engine, "_lpstudy_serialized", False):
        return engine

    @sa.event.listens_for(engine, "connect")
    def _driver_autocommit(dbapi_connection, connection_record):
        dbapi_connection.isolation_level = None  # pysqlite emits no BEGIN of its own

    @sa.event.listens_for(engine, "begin")
    def _begin_immediate(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    engine.dispose()
    engine._lpstudy_serialized = True
    return engine


def engine_url(url: str, readonly: bool = False) -> str:
    return str(readonly_url(url)) if readonly else url


def make_engine(url: str, readonly: bool = False, check: bool = False) -> Engine:
    """An engine for the study database at url. readonly: refuses every write (see the module).
    check: connect now, so that an unreachable database is one line (StudyUnavailable) here rather
    than an error in the middle of a read."""
    if storage_kind(url) not in ("sqlite", "postgresql", "mysql"):
        raise UserError(f"{redact(url)} is not a SQL database")
    if readonly:
        problem = missing_file_message(url)
        if problem:
            raise StudyUnavailable(problem)
    try:
        engine = sa.create_engine(engine_url(url, readonly), **engine_kwargs(url, readonly))
    except ImportError:
        raise UserError(f"the database driver for {redact(url)} is not installed; "
                        "pip install 'lpstudy[postgres]'") from None
    if not readonly:
        serialize_sqlite_writes(engine)
    if check:
        try:
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError as exc:
            engine.dispose()
            raise StudyUnavailable(f"cannot read the study database at {redact(url)}: "
                                   f"{first_line(exc, url)}") from None
    return engine


def first_line(exc: BaseException, url: str | None = None) -> str:
    """The root cause of a database error in one line, without any password."""
    root = exc
    seen = set()
    while root is not None and id(root) not in seen:
        seen.add(id(root))
        if getattr(root, "orig", None) is not None:
            root = root.orig
            break
        nxt = root.__cause__ or root.__context__
        if nxt is None:
            break
        root = nxt
    text = str(root).strip()
    text = text.splitlines()[0] if text else type(root).__name__
    password = password_of(url) if url else None
    if password:
        text = text.replace(password, "***")
    return text[:300]


@contextlib.contextmanager
def reading(url: str) -> Iterator[None]:
    """Turn a database error during a read into StudyUnavailable (one line, no password)."""
    try:
        yield
    except UserError:
        raise
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        raise StudyUnavailable(f"cannot read the study database at {redact(url)}: {first_line(exc, url)}") from None
