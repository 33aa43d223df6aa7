"""What every kind of storage answers (see the package's docstring for the kinds).

A kind is one object for all the URLs of its scheme; each question takes the URL. Telling a URL's
kind imports neither Optuna nor a database driver (the command line's help and checks stay quick);
opening a storage does. The defaults here
are those of a server that is not a SQL database (no local file, no engine, no lock); the shared
behaviour of the SQL kinds is in `sql`, that of the kinds kept in a local file in `files`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lpstudy.db.urls import redact
from lpstudy.errors import UserError

if TYPE_CHECKING:  # Optuna and the retries load when a storage is opened: `lpstudy --help` stays quick
    from optuna.storages import BaseStorage
    from sqlalchemy.engine import Engine

    from lpstudy.db.outages import RetryPolicy
    from lpstudy.db.proxy_calls import ProxyCalls

CONNECT_TIMEOUT_S = 5  # an unreachable server fails within this many seconds
CREATE_LOCK = "lpstudy:create"  # the lock `create` and `replicate` hold (lpstudy.db.locks)


class StorageKind:
    """One kind of storage: its URL rules, how Optuna's storage is opened on it, its locks, how a
    dead worker is noticed, where checkpoints and learning curves go."""

    name: str = ""  # as the errors and `StudyStorage.kind.name` say it: sqlite, postgresql, ...
    url_form: str | None = None  # how its URL looks, in the list of forms an unknown URL is told
    # Optuna's tables (and lpstudy's metrics table) are in a SQL database that this process reaches
    # through SQLAlchemy: readers select from them directly (lpstudy.db.optuna_tables).
    sql: bool = False
    # Where a trial's learning curve lives: a row per evaluation in the metrics table, else the
    # trial's system attributes lpstudy_metrics:<step> (lpstudy.values.metrics_attr_name).
    curves_in_table: bool = False
    # How a dead worker's trial is noticed: Optuna's heartbeats (RDBStorage), else lpstudy's own
    # lease in a trial system attribute (lpstudy.study.lease).
    optuna_heartbeats: bool = False
    # Whether `lock` is a lock across processes (creation, the n_trials target); else it holds nothing.
    has_lock: bool = False

    # --- URL rules ---------------------------------------------------------------------------------

    def owns(self, url: str) -> bool:
        """Whether url is of this kind (by its scheme, here the kind's name in any case); says
        nothing about whether it can be used."""
        return "://" in url and url.split("://", 1)[0].lower() == self.name

    def validate(self, url: str) -> None:
        """UserError, one line, unless url can be used (a port that is a number, a file named)."""

    def local_file(self, url: str, creating: bool = False) -> Path | None:
        """The file the data is kept in; None for a server."""
        return None

    # Files the database keeps beside its local file, FILE<suffix>: removed with it by a failed create.
    companions: tuple[str, ...] = ()

    def readonly_url(self, url: str) -> str:
        """A URL that cannot write, where the database allows it."""
        return url

    def missing_file_message(self, url: str) -> str | None:
        """Why the URL cannot be read (no such file, a folder, not a database), or None."""
        return None

    def prepare_to_create(self, url: str) -> Path | None:
        """Before a study is created: make the folder of its file; the folder if it was made now."""
        return None

    # --- opening -----------------------------------------------------------------------------------

    def engine_options(self, url: str, readonly: bool = False) -> dict[str, Any]:
        """create_engine's options, the same for Optuna's RDBStorage and lpstudy's own reads."""
        raise UserError(f"{redact(url)} is not a SQL database")

    def engine(self, url: str, readonly: bool = False, check: bool = False) -> Engine:
        """A SQLAlchemy engine on the database (lpstudy.db.engines.make_engine says the options)."""
        raise UserError(f"{redact(url)} is not a SQL database")

    def open_optuna(self, url: str, readonly: bool, create_tables: bool,
                    policy: RetryPolicy) -> tuple[BaseStorage, Engine | None]:
        """Optuna's storage on url and, where SQL is at hand, the engine the metrics table shares
        (lpstudy.db.optuna_storage.open_storage says what readonly and create_tables mean)."""
        raise NotImplementedError

    def proxy_calls(self, url: str, policy: RetryPolicy) -> ProxyCalls | None:
        """lpstudy's own calls on a storage proxy at url (lpstudy.db.proxy_calls), retried as
        policy says; None for the kinds that are no proxy."""
        return None

    # --- across processes --------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, url: str, name: str = CREATE_LOCK) -> Iterator[None]:
        """Hold the storage's lock called name for the block (lpstudy.db.locks); here: none."""
        yield

    def default_artifacts(self, url: str) -> str | None:
        """Where trials keep their checkpoints when no --artifacts is given; None: nowhere."""
        return None

    def __repr__(self) -> str:
        return f"<storage kind {self.name}>"
