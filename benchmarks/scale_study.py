"""Write a big synthetic study fast: the rows a real worker writes, inserted in bulk.

lpstudy.study.synthetic writes a study trial by trial through Optuna (about 4 ms a trial plus its
evaluations: an hour for 100,000 trials). This writes the same trials (synthetic_trials: the
attributes through lpstudy.study.trial_attributes, as the worker writes them) straight into
Optuna's tables and the metrics table, a few thousand trials per statement: trials,
trial_values, trial_params (with Optuna's distribution JSON), trial_user_attributes (JSON, as
Optuna's storage encodes them), trial_system_attributes (an enqueued trial's fixed_params),
trial_intermediate_values (the validation loss the pruner reads) and lpstudy_metrics. The study
itself is created by lpstudy (lpstudy.study.studies.create_study), so its spec and tables are the
real ones. PostgreSQL gets COPY; SQLite gets executemany in one transaction per chunk.

    python benchmarks/scale_study.py sqlite:////tmp/big.db --trials 10000 --evals 50
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK = 2000  # trials per round trip

TABLE_COLUMNS = {
    "trial_values": ("trial_id", "objective", "value", "value_type"),
    "trial_params": ("trial_id", "param_name", "param_value", "distribution_json"),
    "trial_user_attributes": ("trial_id", "key", "value_json"),
    "trial_system_attributes": ("trial_id", "key", "value_json"),
    "trial_intermediate_values": ("trial_id", "step", "intermediate_value", "intermediate_value_type"),
}


def _metric_columns() -> tuple[str, ...]:
    from lpstudy.training.metrics import METRIC_FIELDS

    return ("trial_id", "step", "study_name", "trial_number", *[f for f in METRIC_FIELDS if f != "step"])


def _copy(raw, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """PostgreSQL: COPY rows into table (psycopg 3)."""
    if not rows:
        return
    with raw.cursor() as cur:
        with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _many(raw, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """SQLite: executemany."""
    if not rows:
        return
    marks = ", ".join("?" for _ in columns)
    raw.cursor().executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _sqlite_time(moment):
    """A datetime as SQLAlchemy stores it in SQLite."""
    return None if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def write_scale_study(storage_url: str, study_name: str, n_trials: int, n_evals: int = 50, seed: int = 0,
                      progress=None) -> dict:
    """Write a synthetic search study of n_trials × n_evals into storage_url (created if absent);
    what was written: {"trials", "evaluations", "seconds"}."""
    import optuna
    from optuna.distributions import distribution_to_json

    from lpstudy.db.kinds import storage_at
    from lpstudy.db.kinds.sql import SqlStorage
    from lpstudy.errors import UserError
    from lpstudy.study.studies import create_study
    from lpstudy.study.synthetic import synthetic_spec, synthetic_trials
    from lpstudy.training.metrics import METRIC_FIELDS
    from lpstudy.values import FIXED_PARAMS_ATTR, finite_or_none

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    spec = synthetic_spec("search", "smoke", (), 5, True)
    opened = storage_at(storage_url)
    if not isinstance(opened, SqlStorage):  # checked before anything is made there
        raise UserError(f"{storage_url}: the tables are written in bulk with SQL, so the storage must be a SQL "
                        "database (sqlite:/// or postgresql://)")
    opened.open(create_tables=True)
    study, _ = create_study(opened, study_name, spec)
    study_id = study._study_id
    engine = opened.engine
    postgres = engine.dialect.name == "postgresql"
    insert = _copy if postgres else _many
    floats = [f for f in METRIC_FIELDS if f != "step"]
    metric_columns = _metric_columns()
    dist_json: dict = {}  # each distribution (equal ones hash alike) as Optuna writes it
    trials = synthetic_trials(kind="search", n_trials=n_trials, n_evals=n_evals, seed=seed)
    written = evaluations = 0
    while written < n_trials:
        chunk = [t for _, t in zip(range(CHUNK), trials)]
        if not chunk:
            break
        with engine.begin() as conn:
            raw = conn.connection.driver_connection
            when = (lambda d: d) if postgres else _sqlite_time
            insert(raw, "trials", ("number", "study_id", "state", "datetime_start", "datetime_complete"),
                   [(t.number, study_id, t.state, when(t.datetime_start), when(t.datetime_complete))
                    for t in chunk])
            ids: dict[int, int] = dict(conn.exec_driver_sql(
                "SELECT number, trial_id FROM trials WHERE study_id = %d AND number >= %d AND number <= %d"
                % (study_id, chunk[0].number, chunk[-1].number)).all())
            rows: dict[str, list[tuple]] = {table: [] for table in TABLE_COLUMNS}
            metric_rows = []
            for t in chunk:
                tid = ids[t.number]
                if t.value is not None:
                    rows["trial_values"].append((tid, 0, t.value, "FINITE"))
                if t.state == "WAITING":  # enqueued: its parameters wait in a system attribute
                    rows["trial_system_attributes"].append((tid, FIXED_PARAMS_ATTR, json.dumps(t.params)))
                else:
                    for name, value in t.params.items():
                        dist = t.distributions[name]
                        text = dist_json.get(dist) or dist_json.setdefault(dist, distribution_to_json(dist))
                        rows["trial_params"].append((tid, name, float(dist.to_internal_repr(value)), text))
                for key, value in t.user_attrs.items():
                    rows["trial_user_attributes"].append((tid, key, json.dumps(value)))
                for key, value in t.system_attrs.items():
                    rows["trial_system_attributes"].append((tid, key, json.dumps(value)))
                for r in t.records:
                    if math.isfinite(r.val_loss):
                        rows["trial_intermediate_values"].append((tid, r.step, r.val_loss, "FINITE"))
                    metric_rows.append((tid, r.step, study_name, t.number,
                                        *(finite_or_none(getattr(r, f)) for f in floats)))
                evaluations += len(t.records)
            for table, columns in TABLE_COLUMNS.items():
                insert(raw, table, columns, rows[table])
            insert(raw, "lpstudy_metrics", metric_columns, metric_rows)
        written += len(chunk)
        if progress is not None:
            progress(written, n_trials)
    if postgres:
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    return {"trials": written, "evaluations": evaluations, "seconds": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("storage")
    parser.add_argument("--study", default="scale")
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--evals", type=int, default=50)
    args = parser.parse_args(argv)
    from lpstudy.errors import UserError

    try:
        done = write_scale_study(args.storage, args.study, args.trials, args.evals,
                                 progress=lambda n, total: print(f"\r{n}/{total} trials", end="", file=sys.stderr))
    except UserError as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    print(file=sys.stderr)
    print(json.dumps(done))


if __name__ == "__main__":
    main()
