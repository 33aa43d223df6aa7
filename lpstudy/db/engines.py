"""SQLAlchemy engines for a study database, with one set of options for every command (the
storage kind's: lpstudy.db.kinds).

readonly=True gives an engine that cannot write: SQLite opened with mode=ro (which never creates
the file either), PostgreSQL sessions with default_transaction_read_only (and, in a deployment,
the read-only role of storage/init). Writers get SQLite's busy timeout, so that a few workers on
one file wait for each other's transactions instead of failing, and serialised transactions
(lpstudy.db.kinds.sqlite.serialize_sqlite_writes), so that a read-then-write such as Optuna's
WAITING -> RUNNING claim is atomic across processes.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from lpstudy.db.kinds import kind_of


def make_engine(url: str, readonly: bool = False, check: bool = False) -> Engine:
    """An engine for the study database at url. readonly: refuses every write (see the module).
    check: connect now, so that an unreachable database is one line (StudyUnavailable) here rather
    than an error in the middle of a read. UserError for a storage that is not a SQL database."""
    return kind_of(url).engine(url, readonly=readonly, check=check)
