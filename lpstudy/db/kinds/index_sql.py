"""The statement that adds one of lpstudy's read indexes (lpstudy.db.read_indexes) to an Optuna
table, in the database's dialect. A module of its own: lpstudy.db.kinds.sql opens storages (and
makes lpstudy's tables through lpstudy.db.metrics_table, which makes the indexes), so the index
statement cannot live there without an import cycle."""

from __future__ import annotations


def create_index_sql(conn, name: str, table: str, columns: tuple[str, ...], include: tuple[str, ...] = (),
                     where: str | None = None) -> str | None:
    """CREATE INDEX IF NOT EXISTS in the connection's dialect (PostgreSQL, SQLite); None where the
    dialect has no such statement (MySQL: lpstudy adds no index there). `include`: columns the
    index carries for index-only reads (PostgreSQL's INCLUDE; SQLite has none, so they become its
    last key columns); `where`: a partial index's condition."""
    if conn.dialect.name not in ("postgresql", "sqlite"):
        return None
    if conn.dialect.name == "postgresql":
        keys, carried = columns, f" INCLUDE ({', '.join(include)})" if include else ""
    else:
        keys, carried = columns + include, ""
    return (f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({', '.join(keys)}){carried}"
            + (f" WHERE {where}" if where else ""))
