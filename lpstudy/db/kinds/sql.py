"""What the SQL kinds share (SQLite, PostgreSQL, MySQL): SQLAlchemy URLs, engines, Optuna's
RDBStorage with its heartbeats, and the metrics table beside Optuna's tables.

readonly=True gives an engine that cannot write: the kind's read-only URL (SQLite's mode=ro, which
never creates the file either) and options (PostgreSQL's read-only sessions); in a deployment, the
read-only role of storage/init too. A writer's engine gets the kind's `writer_engine` treatment
(SQLite: serialised transactions, so that Optuna's WAITING -> RUNNING claim is atomic).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from lpstudy.db import optuna_private
from lpstudy.db.kinds.base import StudyStorage, _grace
from lpstudy.db.trial_reader import SqlReads
from lpstudy.db.urls import first_line, redact, sql_backend
from lpstudy.errors import NoStudiesYet, StudyUnavailable, UserError

if TYPE_CHECKING:
    from collections.abc import Callable

    import optuna
    from optuna.storages import RDBStorage
    from optuna.trial import TrialState

    from lpstudy.db.liveness import OptunaHeartbeats
    from lpstudy.training.metrics import MetricRecord


class SqlStorage(StudyStorage):
    """A database that SQLAlchemy and Optuna's RDBStorage speak to. Its one engine is Optuna's
    RDBStorage's where that is open (a writer's: the metrics table shares it), else a read-only one
    of its own, made and reached on first use (a reader's: `lpstudy status` never opens Optuna's)."""

    @classmethod
    def owns(cls, url: str) -> bool:
        return sql_backend(url) == cls.name

    def __init__(self, url: str, readonly: bool = False, retry_s: float | None = None) -> None:
        super().__init__(url, readonly, retry_s)
        self._engine: Engine | None = None

    @cached_property
    def reads(self) -> SqlReads:
        """Plain SELECTs on Optuna's tables through its engine (lpstudy.db.trial_reader)."""
        return SqlReads(self)

    def validate(self) -> None:
        try:
            port = make_url(self.url).port
        except ValueError:  # the only part SQLAlchemy parses as a number
            raise UserError(f"storage URL {self.display_url!r}: the port must be a number in 1..65535") from None
        except sa.exc.ArgumentError:
            raise UserError(f"storage URL {self.display_url!r} cannot be read as a database URL") from None
        if port is not None and not 0 < port < 65536:
            raise UserError(f"storage URL {self.display_url!r}: port {port} is not in 1..65535")

    def engine_options(self, readonly: bool = False) -> dict[str, Any]:
        """create_engine's options, the same for Optuna's RDBStorage and lpstudy's own reads."""
        return {"pool_pre_ping": True}

    def writer_engine(self, engine: Engine) -> Engine:
        """What a writer's engine needs besides its options (see SQLite's); here nothing."""
        return engine

    def make_engine(self, readonly: bool = False, check: bool = False) -> Engine:
        """A new SQLAlchemy engine on the database with this kind's options: readonly refuses every
        write; check connects now, so that an unreachable database is one line (StudyUnavailable)
        here rather than an error in the middle of a read."""
        if readonly:
            self.check_file()
        try:
            engine = sa.create_engine(self.readonly_url() if readonly else self.url, **self.engine_options(readonly))
        except ImportError:
            raise UserError(f"the database driver for {self.display_url} is not installed; "
                            "pip install 'lpstudy[postgres]'") from None
        if not readonly:
            self.writer_engine(engine)
        if check:
            try:
                with engine.connect() as conn:
                    conn.execute(sa.text("SELECT 1"))
            except sa.exc.SQLAlchemyError as exc:
                from lpstudy.db.outages import unreachable_or_unavailable

                engine.dispose()
                raise unreachable_or_unavailable(exc)(f"cannot read the study database at {self.display_url}: "
                                                      f"{first_line(exc, self.url)}") from None
        return engine

    @property
    def engine(self) -> Engine:
        """The one engine (see the class): Optuna's where it is open or this storage writes, else a
        read-only one made and reached (StudyUnavailable otherwise) on first use."""
        with self._opening:
            if self._engine is None:
                self._engine = (cast("RDBStorage", self.optuna).engine if self._optuna is not None or not self.readonly
                                else self.make_engine(readonly=True, check=True))
            return self._engine

    def _open_optuna(self, create_tables: bool) -> RDBStorage:
        """RetryingRDBStorage: heartbeats, stale-trial retries, and the engine that the metrics table
        shares. A reader fails at once: a refused write is no outage to wait out."""
        from lpstudy.db.outages import attach

        rdb = self._open_rdb(create_tables)
        if not self.readonly:
            attach(rdb, self.retry)
        return rdb

    def _open_rdb(self, create_tables: bool) -> RDBStorage:
        import optuna

        from lpstudy.db.metrics_table import ensure_metrics_table
        from lpstudy.db.outages import RetryingRDBStorage

        readonly, url = self.readonly, self.url
        if create_tables:
            self.prepare_to_create()
        try:
            if not create_tables and not self._schema_complete():
                raise NoStudiesYet(_no_studies_yet(url))
            rdb = RetryingRDBStorage(self.readonly_url() if readonly else url,
                                     engine_kwargs=self.engine_options(readonly),
                                     skip_table_creation=readonly or not create_tables,
                                     skip_compatibility_check=readonly)
            if not readonly:
                self.writer_engine(rdb.engine)
            if readonly:
                with rdb.engine.connect() as conn:  # reach it now, so the error is one clear line
                    conn.execute(sa.text("SELECT 1"))
            if create_tables:
                self.retry.call(ensure_metrics_table, rdb.engine)
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

    def _release(self) -> None:
        """The engines' pooled connections, closed (Optuna's RDBStorage shares the writer's)."""
        for engine in {id(e): e for e in (self._engine, getattr(self._optuna, "engine", None)) if e is not None}.values():
            engine.dispose()
        self._engine = self._optuna = None

    # --- before a command uses it ------------------------------------------------------------------

    def check_readable(self) -> None:
        """A mistyped file, a wrong password, a refused port: StudyUnavailable now, on the engine
        this storage reads with (made and reached here)."""
        super().check_readable()
        self.engine  # noqa: B018 - made and reached now

    def check_proxy_target(self) -> None:
        """A SQL database is what the proxy serves."""

    # --- what a worker asks: one query each, where Optuna's API reads every trial ------------------

    def claim_waiting(self, study: optuna.Study) -> int | None:
        """One of the oldest waiting trials (lpstudy.db.waiting_trials.claim_waiting_trial_id): Optuna's
        pop loads every waiting trial to take the first; with 1,000 cells waiting, 230 ms a claim on
        PostgreSQL against 6 ms (docs/scale-workers.md)."""
        from lpstudy.db.waiting_trials import claim_waiting_trial_id

        return claim_waiting_trial_id(self, optuna_private.study_storage(study), optuna_private.study_id(study))

    def count_trials(self, study: optuna.Study, states: tuple[TrialState, ...]) -> int:
        from lpstudy.db.trial_states import count_trials

        def count() -> int:
            with self.engine.connect() as conn:
                return count_trials(conn, optuna_private.study_id(study), tuple(s.name for s in states))

        return self.call(count)

    def trial_state(self, study: optuna.Study, trial_id: int) -> TrialState:
        from optuna.trial import TrialState

        from lpstudy.db.trial_states import trial_state

        def read() -> str:
            with self.engine.connect() as conn:
                return trial_state(conn, trial_id)

        return TrialState[self.call(read)]

    def for_grid_worker(self, study: optuna.Study) -> optuna.Study:
        """Straight on Optuna's RDBStorage rather than through the cache that optuna.load_study puts
        in front of it. The cache makes a sampler's reads incremental, and a grid worker never
        samples; it reads every unfinished trial again on each read, and a grid's waiting cells are
        unfinished trials, so that with 5,000 cells waiting each read loaded them all; and it refuses
        the parameters of a trial it has not loaded, as a trial claimed by claim_waiting is (KeyError
        in set_trial_param). Optuna reaches the storage through Study._storage only
        (tests/test_optuna_private.py checks it)."""
        return optuna_private.set_study_storage(study, self.optuna)

    def enqueue_cells(self, study: optuna.Study, missing_cells: Callable[[], list[dict[str, Any]]]) -> int:
        """The cells in one transaction (lpstudy.db.waiting_trials: the rows Optuna's enqueue_trial
        writes, 5,000 cells in about a second instead of minutes), retried on an outage: the cells are
        looked up again, so a commit whose reply was lost is not enqueued twice."""
        from lpstudy.db.waiting_trials import enqueue_waiting_trials

        def bulk() -> int:
            missing = missing_cells()
            with self.engine.begin() as conn:
                return enqueue_waiting_trials(conn, optuna_private.study_id(study), missing)

        return self.call(bulk)

    def liveness(self, interval_s: int, grace_period_s: int | None, max_retry: int | None) -> OptunaHeartbeats:
        """Optuna's heartbeats (lpstudy.db.liveness.OptunaHeartbeats)."""
        from lpstudy.db.liveness import OptunaHeartbeats

        return OptunaHeartbeats(self, int(interval_s), _grace(interval_s, grace_period_s), max_retry)

    # --- learning curves: a row per evaluation in the metrics table --------------------------------

    def prepare_curves(self) -> None:
        from lpstudy.db.metrics_table import ensure_metrics_table

        self.call(ensure_metrics_table, self.engine)

    def write_evaluations(self, study_name: str, trial_id: int, trial_number: int,
                          records: list[MetricRecord]) -> None:
        """Rows of the metrics table, in one transaction, retried through an outage."""
        from lpstudy.db.metrics_table import write_metrics

        attempts = [0]

        def write() -> None:
            attempts[0] += 1
            try:
                write_metrics(self.engine, study_name, trial_id, trial_number, records)
            except sa.exc.IntegrityError:
                if attempts[0] == 1:
                    raise
                # A retry after a lost connection: the first attempt had committed.

        self.call(write)

    def delete_curves(self, study_name: str) -> int:
        """The study's rows of the metrics table (none where the table was never made), retried
        through an outage."""
        from lpstudy.db.metrics_table import delete_metrics

        return self.call(delete_metrics, self.engine, study_name)

    def add_finished_trial(self, study_name: str, study_id: int, template: Any, records: list[MetricRecord]) -> int:
        """The trial through Optuna, then its evaluations as rows of the metrics table."""
        trial_id = self.optuna.create_new_trial(study_id, template_trial=template)
        if records:
            number = self.optuna.get_trial_number_from_id(trial_id)
            self.write_evaluations(study_name, trial_id, number, records)
        return trial_id

    def _schema_complete(self) -> bool:
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
        options = {k: v for k, v in self.engine_options(self.readonly).items() if k != "pool_pre_ping"}
        engine = sa.create_engine(self.readonly_url() if self.readonly else self.url, poolclass=sa.pool.NullPool,
                                  **options)
        try:
            with engine.connect() as conn:
                return int(conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one()) > 0
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
