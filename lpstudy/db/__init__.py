"""The storage layer, the only code that opens a database: storage URLs and their rules (urls),
SQLAlchemy engines (engines), Optuna's storage with retries, heartbeats and a read-only mode
(optuna_storage), lpstudy's metrics table (metrics_table) and fast reads of Optuna's tables
(optuna_tables). No torch."""
