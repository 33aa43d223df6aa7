"""What the SQL kinds share (SQLite, PostgreSQL, MySQL): SQLAlchemy URLs, engines, Optuna's
RDBStorage with its heartbeats, and the metrics table beside Optuna's tables.

readonly=True gives an engine that cannot write: the kind's read-only URL (SQLite's mode=ro, which
never creates the file either) and options (PostgreSQL's read-only sessions); in a deployment, the
read-only role of storage/init too. A writer's engine gets the kind's `writer_engine` treatment
(SQLite: serialised transactions, so that Optuna's WAITING -> RUNNING claim is atomic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from lpstudy.db.kinds.base import StorageKind
from lpstudy.db.urls import first_line, redact, sql_backend
from lpstudy.errors import NoStudiesYet, StudyUnavailable, UserError

if TYPE_CHECKING:
    from collections.abc import Callable

    import optuna
    from optuna.storages import RDBStorage
    from optuna.trial import TrialState

    from lpstudy.db.liveness import OptunaHeartbeats
    from lpstudy.db.optuna_storage import StudyStorage
    from lpstudy.db.outages import RetryPolicy
    from lpstudy.db.trial_reader import SqlReader
    from lpstudy.training.metrics import MetricRecord

class SqlKind(StorageKind):
    """A database that SQLAlchemy and Optuna's RDBStorage speak to."""

    def owns(self, url: str) -> bool:
        return sql_backend(url) == self.name

    def validate(self, url: str) -> None:
        try:
            port = make_url(url).port
        except ValueError:  # the only part SQLAlchemy parses as a number
            raise UserError(f"storage URL {redact(url)!r}: the port must be a number in 1..65535") from None
        except sa.exc.ArgumentError:
            raise UserError(f"storage URL {redact(url)!r} cannot be read as a database URL") from None
        if port is not None and not 0 < port < 65536:
            raise UserError(f"storage URL {redact(url)!r}: port {port} is not in 1..65535")

    def engine_options(self, url: str, readonly: bool = False) -> dict[str, Any]:
        return {"pool_pre_ping": True}

    def writer_engine(self, engine: Engine) -> Engine:
        """What a writer's engine needs besides its options (see SQLite's); here nothing."""
        return engine

    def _create_engine(self, url: str, readonly: bool) -> Engine:
        try:
            return sa.create_engine(self.readonly_url(url) if readonly else url,
                                    **self.engine_options(url, readonly))
        except ImportError:
            raise UserError(f"the database driver for {redact(url)} is not installed; "
                            "pip install 'lpstudy[postgres]'") from None

    def engine(self, url: str, readonly: bool = False, check: bool = False) -> Engine:
        if readonly:
            problem = self.missing_file_message(url)
            if problem:
                raise StudyUnavailable(problem)
        engine = self._create_engine(url, readonly)
        if not readonly:
            self.writer_engine(engine)
        if check:
            try:
                with engine.connect() as conn:
                    conn.execute(sa.text("SELECT 1"))
            except sa.exc.SQLAlchemyError as exc:
                from lpstudy.db.outages import unreachable_or_unavailable

                engine.dispose()
                raise unreachable_or_unavailable(exc)(f"cannot read the study database at {redact(url)}: "
                                                      f"{first_line(exc, url)}") from None
        return engine

    def open_optuna(self, url: str, readonly: bool, create_tables: bool,
                    policy: RetryPolicy) -> tuple[RDBStorage, Engine]:
        """RetryingRDBStorage: heartbeats, stale-trial retries, and the engine that the metrics table
        shares. A reader fails at once: a refused write is no outage to wait out."""
        from lpstudy.db.outages import attach

        rdb = self._open_rdb(url, readonly, create_tables, policy)
        if not readonly:
            attach(rdb, policy)
        return rdb, rdb.engine

    def _open_rdb(self, url: str, readonly: bool, create_tables: bool, policy: RetryPolicy) -> RDBStorage:
        import optuna

        from lpstudy.db.metrics_table import ensure_metrics_table
        from lpstudy.db.outages import RetryingRDBStorage

        if create_tables:
            self.prepare_to_create(url)
        try:
            if not create_tables and not self._schema_complete(url, readonly):
                raise NoStudiesYet(_no_studies_yet(url))
            rdb = RetryingRDBStorage(self.readonly_url(url) if readonly else url,
                                     engine_kwargs=self.engine_options(url, readonly),
                                     skip_table_creation=readonly or not create_tables,
                                     skip_compatibility_check=readonly)
            if not readonly:
                self.writer_engine(rdb.engine)
            if readonly:
                with rdb.engine.connect() as conn:  # reach it now, so the error is one clear line
                    conn.execute(sa.text("SELECT 1"))
            if create_tables:
                policy.call(ensure_metrics_table, rdb.engine)
            return rdb
        except ImportError:
            raise UserError(f"the database driver for {redact(url)} is not installed; "
                            "pip install 'lpstudy[postgres]'") from None
        except (sa.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError) as exc:
            if _no_tables(exc):
                raise NoStudiesYet(_no_studies_yet(url)) from None
            from lpstudy.db.outages import unreachable_or_unavailable  # a lost connection: exit status 75

            raise unreachable_or_unavailable(exc)(
                f"cannot open the study database {redact(url)}: {first_line(exc, url)}; check that it is "
                "running and reachable, and the URL (--storage or LPSTUDY_STORAGE)") from None
        except RuntimeError as exc:  # Optuna's schema version check
            raise UserError(f"the study database {redact(url)} cannot be used: {first_line(exc)}") from None


    def reader(self, url: str) -> SqlReader:
        """Plain SELECTs on Optuna's tables (lpstudy.db.trial_reader.SqlReader)."""
        from lpstudy.db.trial_reader import SqlReader

        return SqlReader(url, self)

    # --- before a command uses it ------------------------------------------------------------------

    def check_readable(self, url: str) -> None:
        super().check_readable(url)
        self.engine(url, readonly=True, check=True).dispose()  # a wrong password, a refused port: now

    def check_proxy_target(self, url: str) -> None:
        """A SQL database is what the proxy serves."""

    # --- what a worker asks: one query each, where Optuna's API reads every trial ------------------

    def claim_waiting(self, storage: StudyStorage, study: optuna.Study) -> int | None:
        """One of the oldest waiting trials (lpstudy.db.waiting_trials.claim_waiting_trial_id): Optuna's
        pop loads every waiting trial to take the first; with 1,000 cells waiting, 230 ms a claim on
        PostgreSQL against 6 ms (docs/scale-workers.md)."""
        from lpstudy.db.waiting_trials import claim_waiting_trial_id

        return claim_waiting_trial_id(storage, study._storage, study._study_id)

    def count_trials(self, storage: StudyStorage, study: optuna.Study, states: tuple[TrialState, ...]) -> int:
        from lpstudy.db.trial_states import count_trials

        def count() -> int:
            with storage.engine.connect() as conn:
                return count_trials(conn, study._study_id, tuple(s.name for s in states))

        return storage.call(count)

    def trial_state(self, storage: StudyStorage, study: optuna.Study, trial_id: int) -> TrialState:
        from optuna.trial import TrialState

        from lpstudy.db.trial_states import trial_state

        def read() -> str:
            with storage.engine.connect() as conn:
                return trial_state(conn, trial_id)

        return TrialState[storage.call(read)]

    def for_grid_worker(self, storage: StudyStorage, study: optuna.Study) -> optuna.Study:
        """Straight on Optuna's RDBStorage rather than through the cache that optuna.load_study puts
        in front of it (lpstudy.study.claims.for_grid_worker says why)."""
        study._storage = storage.optuna
        return study

    def enqueue_cells(self, storage: StudyStorage, study: optuna.Study,
                      missing_cells: Callable[[], list[dict[str, Any]]]) -> int:
        """The cells in one transaction (lpstudy.db.waiting_trials: the rows Optuna's enqueue_trial
        writes, 5,000 cells in about a second instead of minutes), retried on an outage: the cells are
        looked up again, so a commit whose reply was lost is not enqueued twice."""
        from lpstudy.db.waiting_trials import enqueue_waiting_trials

        def bulk() -> int:
            missing = missing_cells()
            with storage.engine.begin() as conn:
                return enqueue_waiting_trials(conn, study._study_id, missing)

        return storage.call(bulk)

    def liveness(self, storage: StudyStorage, interval_s: int, grace_period_s: int,
                 max_retry: int | None) -> OptunaHeartbeats:
        """Optuna's heartbeats (lpstudy.db.liveness.OptunaHeartbeats)."""
        from lpstudy.db.liveness import OptunaHeartbeats

        return OptunaHeartbeats(storage, interval_s, grace_period_s, max_retry)

    def close(self, storage: StudyStorage) -> None:
        """The engine's pooled connections, closed (Optuna's RDBStorage shares it)."""
        storage.engine.dispose()

    # --- learning curves: a row per evaluation in the metrics table --------------------------------

    def prepare_curves(self, storage: StudyStorage) -> None:
        from lpstudy.db.metrics_table import ensure_metrics_table

        storage.call(ensure_metrics_table, storage.engine)

    def write_evaluations(self, storage: StudyStorage, study_name: str, trial_id: int, trial_number: int,
                          records: list[MetricRecord]) -> None:
        """Rows of the metrics table, in one transaction, retried through an outage."""
        from lpstudy.db.metrics_table import write_metrics

        attempts = [0]

        def write() -> None:
            attempts[0] += 1
            try:
                write_metrics(storage.engine, study_name, trial_id, trial_number, records)
            except sa.exc.IntegrityError:
                if attempts[0] == 1:
                    raise
                # A retry after a lost connection: the first attempt had committed.

        storage.call(write)

    def delete_curves(self, storage: StudyStorage, study_name: str) -> int:
        """The study's rows of the metrics table (none where the table was never made), retried
        through an outage."""
        from lpstudy.db.metrics_table import delete_metrics

        return storage.call(delete_metrics, storage.engine, study_name)

    def add_finished_trial(self, storage: StudyStorage, study_name: str, study_id: int, template: Any,
                           records: list[MetricRecord]) -> int:
        """The trial through Optuna, then its evaluations as rows of the metrics table."""
        trial_id = storage.optuna.create_new_trial(study_id, template_trial=template)
        if records:
            number = storage.optuna.get_trial_number_from_id(trial_id)
            self.write_evaluations(storage, study_name, trial_id, number, records)
        return trial_id

    def _schema_complete(self, url: str, readonly: bool) -> bool:
        """Whether a creator has finished Optuna's schema: its last step, alembic's stamp, is there.

        Optuna's RDBStorage writes to the schema whenever it is opened, even with
        skip_table_creation: its _VersionManager inserts the version_info row when there is none, and
        creates and stamps the alembic_version table when that is missing or empty. A creator makes
        the tables, then that row, then the stamp; a worker that opened the database in between
        wrote them too, and with many workers starting beside the creator, two wrote at once
        (PostgreSQL: duplicate key value violates unique constraint "pg_type_typname_nsp_index", the
        second CREATE TABLE alembic_version; SQLite: table alembic_version already exists), and the
        worker failed to start. Checked first, on a connection of its own, a database without the
        stamp is one that holds no studies yet: the worker waits, and only creators write the schema."""
        options = {k: v for k, v in self.engine_options(url, readonly).items() if k != "pool_pre_ping"}
        engine = sa.create_engine(self.readonly_url(url) if readonly else url, poolclass=sa.pool.NullPool, **options)
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one() > 0
        except sa.exc.SQLAlchemyError as exc:
            if _no_tables(exc, "alembic_version"):
                return False
            raise
        finally:
            engine.dispose()


def _no_studies_yet(url: str) -> str:
    return (f"the database {redact(url)} holds no studies yet; create one first "
            "(`lpstudy create` or `lpstudy replicate`) or check --storage / LPSTUDY_STORAGE")


def _no_tables(exc: BaseException, table: str = "version_info") -> bool:
    """Optuna's table is missing: an empty database, not a broken one."""
    from lpstudy.db.outages import exception_chain

    for e in exception_chain(exc):
        text = str(e).lower()
        if table in text and ("does not exist" in text or "no such table" in text):
            return True
    return False
