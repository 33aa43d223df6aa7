"""Where a study's data lives: one URL, its engines, and the metrics table beside Optuna's tables.

URLs (from `--storage` or LPSTUDY_STORAGE, default DEFAULT_STORAGE):
  sqlite:///path.db                 embedded, the default (storage/lpstudy.db under the current directory)
  postgresql+psycopg://user:pw@host/db   shared, for many workers and machines
  journal:///path.log               Optuna's journal file (no SQL: metrics go to trial attributes)
  grpc://host:port                  Optuna's gRPC storage proxy (`lpstudy storage-proxy`)

The metrics table is ours: one row per evaluation of a trial, its columns built from
lpstudy.metrics.METRIC_FIELDS. It is created idempotently and Optuna's own tables are never altered.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine, URL, make_url
from sqlalchemy.exc import ArgumentError

from lpstudy.errors import UserError
from lpstudy.metrics import METRIC_FIELDS, MetricRecord

DEFAULT_STORAGE = "sqlite:///storage/lpstudy.db"
STORAGE_ENV = "LPSTUDY_STORAGE"
METRICS_TABLE = "lpstudy_metrics"


def storage_url(url: str | None = None) -> str:
    """The storage URL to use: the argument, else $LPSTUDY_STORAGE, else the local SQLite file."""
    url = url or os.environ.get(STORAGE_ENV) or DEFAULT_STORAGE
    kind = storage_kind(url)
    if kind == "sqlite":
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return url


def storage_kind(url: str) -> str:
    """'sqlite', 'postgresql', 'mysql', 'journal' or 'grpc'; UserError for anything else."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "journal":
        return "journal"
    if scheme == "grpc":
        return "grpc"
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError:
        backend = ""
    if backend in ("sqlite", "postgresql", "mysql"):
        return backend
    raise UserError(f"storage URL {redact(url)!r} is not one of sqlite:///FILE, "
                    "postgresql+psycopg://USER:PASSWORD@HOST/DB, journal:///FILE or grpc://HOST:PORT")


def redact(url: str) -> str:
    """The URL with its password replaced by ***: the only form in which a URL is printed or logged."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url.split("@", 1)[-1] if "@" in url else url
    return parsed.render_as_string(hide_password=True)


def is_sql(url: str) -> bool:
    return storage_kind(url) in ("sqlite", "postgresql", "mysql")


def readonly_url(url: str) -> str | URL:
    """A URL that cannot write, where the database allows it (SQLite's mode=ro). PostgreSQL is made
    read-only by its role (storage/init) and by read-only transactions (see make_engine)."""
    if storage_kind(url) != "sqlite":
        return url
    database = make_url(url).database
    if not database or database == ":memory:":
        return url
    path = Path(database).expanduser().resolve()
    return f"sqlite:///file:{path}?mode=ro&uri=true"


def make_engine(url: str, readonly: bool = False) -> Engine:
    """A SQLAlchemy engine for the study database; readonly=True refuses every write."""
    kind = storage_kind(url)
    if kind not in ("sqlite", "postgresql", "mysql"):
        raise UserError(f"{redact(url)} is not a SQL database")
    kwargs: dict = {"pool_pre_ping": True}
    if kind == "sqlite":
        kwargs["connect_args"] = {"timeout": 60}
    if readonly:
        if kind == "sqlite":
            database = make_url(url).database
            if database and database != ":memory:" and not Path(database).expanduser().exists():
                raise UserError(f"no study database at {database}; run `lpstudy create` or pass --storage")
            return sa.create_engine(readonly_url(url), **kwargs)
        if kind == "postgresql":
            kwargs["connect_args"] = {"options": "-c default_transaction_read_only=on"}
    return sa.create_engine(url, **kwargs)


metadata = sa.MetaData()
_FLOAT_FIELDS = [name for name in METRIC_FIELDS if name != "step"]
metrics_table = sa.Table(
    METRICS_TABLE,
    metadata,
    sa.Column("trial_id", sa.Integer, primary_key=True),  # Optuna's trial_id: unique in the database
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("study_name", sa.String(512), nullable=False),
    sa.Column("trial_number", sa.Integer, nullable=False),
    *(sa.Column(name, sa.Float, nullable=True) for name in _FLOAT_FIELDS),
    sa.Index(f"ix_{METRICS_TABLE}_study", "study_name", "trial_number"),
)


def ensure_metrics_table(engine: Engine) -> None:
    """Create the metrics table if it is not there; safe to call from many workers at once."""
    try:
        metadata.create_all(engine, checkfirst=True)
    except sa.exc.OperationalError:
        raise
    except (sa.exc.IntegrityError, sa.exc.ProgrammingError):
        # Two workers raced to create it: the other one won, which is what we wanted.
        metadata.create_all(engine, checkfirst=True)


def _finite_or_none(value: float) -> float | None:
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def metric_row(study_name: str, trial_id: int, trial_number: int, record: MetricRecord) -> dict:
    row = {"trial_id": trial_id, "study_name": study_name, "trial_number": trial_number, "step": record.step}
    row.update({name: _finite_or_none(getattr(record, name)) for name in _FLOAT_FIELDS})
    return row


def write_metrics(engine: Engine, study_name: str, trial_id: int, trial_number: int,
                  records: list[MetricRecord]) -> None:
    """Insert the records of one evaluation (or several) in one transaction."""
    if not records:
        return
    rows = [metric_row(study_name, trial_id, trial_number, r) for r in records]
    with engine.begin() as conn:
        conn.execute(metrics_table.insert(), rows)


def read_metrics(engine: Engine, study_name: str):
    """Every metrics row of a study as a pandas DataFrame (columns: trial_id, trial_number, step,
    and METRIC_FIELDS), sorted by trial and step; empty if the table does not exist yet."""
    import pandas as pd

    columns = ["trial_id", "trial_number", *METRIC_FIELDS]
    if not sa.inspect(engine).has_table(METRICS_TABLE):
        return pd.DataFrame(columns=columns)
    query = (sa.select(*(metrics_table.c[c] for c in columns))
             .where(metrics_table.c.study_name == study_name)
             .order_by(metrics_table.c.trial_number, metrics_table.c.step))
    with engine.connect() as conn:
        frame = pd.read_sql(query, conn)
    return frame.astype({c: "float64" for c in _FLOAT_FIELDS})
