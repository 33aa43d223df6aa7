"""The storage layer, the only code that opens a database: which URL to use and how to show it
(urls), the storage at one URL, one object made once from it that holds the URL, Optuna's storage
and the engine and answers its URL rules, locks, liveness, artifact store, where curves live and how
its studies are read (kinds, trial_reader), Optuna's storage opened with a read-only mode
(optuna_storage) whose calls ride out an outage (outages), the locks across processes (locks), a
failed trial enqueued again (retries), lpstudy's metrics table (metrics_table) and fast reads of
Optuna's tables (optuna_tables). No torch."""
