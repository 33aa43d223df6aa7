"""The storage layer, the only code that opens a database: which URL to use and how to show it
(urls), one object per kind of storage answering its URL rules, engine, opener, locks, liveness,
artifact store and where curves live (kinds), SQLAlchemy engines (engines), Optuna's storage with
a read-only mode (optuna_storage) whose calls ride out an outage (outages), the locks across
processes (locks), a failed trial enqueued again (retries), lpstudy's metrics table (metrics_table)
and fast reads of Optuna's tables (optuna_tables). No torch."""
