"""The metrics table: one row per evaluation of a trial, beside Optuna's tables in the same
database. Its columns are built from lpstudy.training.metrics.METRIC_FIELDS (the one schema). It is
created idempotently and Optuna's own tables are never altered.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lpstudy.db.read_indexes import ensure_read_indexes
from lpstudy.training.metrics import METRIC_FIELDS, MetricRecord
from lpstudy.values import finite_or_none, metrics_attr_name

if TYPE_CHECKING:
    import pandas as pd

METRICS_TABLE = "lpstudy_metrics"

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
    """Create the metrics table if it is not there, and add the columns of metrics that a table made
    by an older lpstudy lacks (nullable floats: its old rows read as NaN), and the indexes of
    lpstudy.db.read_indexes; safe to call from many workers at once."""
    try:
        metadata.create_all(engine, checkfirst=True)
    except sa.exc.OperationalError:
        raise
    except (sa.exc.IntegrityError, sa.exc.ProgrammingError):
        # Two workers raced to create it: the other one won, which is what we wanted.
        metadata.create_all(engine, checkfirst=True)
    for name in missing_columns(engine):
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(f"ALTER TABLE {METRICS_TABLE} ADD COLUMN {name} FLOAT"))
        except (sa.exc.OperationalError, sa.exc.ProgrammingError):
            if name in missing_columns(engine):  # not a race with another worker that added it
                raise
    ensure_read_indexes(engine)  # the indexes lpstudy's readers use on Optuna's tables


def missing_columns(engine: Engine | Connection) -> list[str]:
    """The metric columns the stored table lacks (all of them if there is no table)."""
    inspector = sa.inspect(engine)
    if not inspector.has_table(METRICS_TABLE):
        return list(_FLOAT_FIELDS)
    present = {c["name"] for c in inspector.get_columns(METRICS_TABLE)}
    return [name for name in _FLOAT_FIELDS if name not in present]


def metric_row(study_name: str, trial_id: int, trial_number: int, record: MetricRecord) -> dict[str, Any]:
    row = {"trial_id": trial_id, "study_name": study_name, "trial_number": trial_number, "step": record.step}
    row.update({name: finite_or_none(getattr(record, name)) for name in _FLOAT_FIELDS})
    return row


def write_metrics(engine: Engine, study_name: str, trial_id: int, trial_number: int,
                  records: list[MetricRecord]) -> None:
    """Insert the records of one evaluation (or several) in one transaction."""
    if not records:
        return
    rows = [metric_row(study_name, trial_id, trial_number, r) for r in records]
    with engine.begin() as conn:
        conn.execute(metrics_table.insert(), rows)


def empty_metrics() -> pd.DataFrame:
    """read_metrics's frame without a row."""
    import pandas as pd

    return pd.DataFrame(columns=["trial_id", "trial_number", *METRIC_FIELDS])


def read_metrics(engine: Engine | Connection, study_name: str, trial_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """Every metrics row of a study (or of the trials trial_ids only) as a pandas DataFrame (columns:
    trial_id, trial_number, step, and METRIC_FIELDS), sorted by trial and step; empty if the table
    does not exist yet. On an engine, or on a connection a read holds already (a read of a study's
    tables and its curves in one transaction: on a SQLite writer, whose every transaction takes the
    write lock, a second connection would wait on the first)."""
    import contextlib

    import pandas as pd

    columns = ["trial_id", "trial_number", *METRIC_FIELDS]
    with (engine.connect() if isinstance(engine, Engine) else contextlib.nullcontext(engine)) as conn:
        if not sa.inspect(conn).has_table(METRICS_TABLE):
            return empty_metrics()
        absent = set(missing_columns(conn))  # a table of an older lpstudy, read by a read-only role
        query = (sa.select(*(metrics_table.c[c] for c in columns if c not in absent))
                 .where(metrics_table.c.study_name == study_name if trial_ids is None else  # trial ids are unique
                        metrics_table.c.trial_id.in_([int(i) for i in trial_ids]))
                 .order_by(metrics_table.c.trial_number, metrics_table.c.step))
        frame = pd.read_sql(query, conn)
    for name in absent:
        frame[name] = float("nan")
    return frame[columns].astype({c: "float64" for c in _FLOAT_FIELDS})


def evaluation_attribute(record: MetricRecord) -> tuple[str, dict[str, Any]]:
    """One evaluation as a trial system attribute (storages without SQL): its name and value,
    every number finite or null, as the metrics table holds it."""
    data = {k: (v if k == "step" else finite_or_none(v)) for k, v in record.to_dict().items()}
    return metrics_attr_name(record.step), data


def delete_metrics(engine: Engine, study_name: str) -> int:
    """Delete a study's rows of the metrics table (where there is one); the number deleted."""
    if not sa.inspect(engine).has_table(METRICS_TABLE):
        return 0
    with engine.begin() as conn:
        return conn.execute(metrics_table.delete().where(metrics_table.c.study_name == study_name)).rowcount
