"""One class per kind of storage, one module each, and the one function that makes a URL's storage.

    sqlite:///FILE                        sqlite.py       one machine, a few workers (the default)
    postgresql+psycopg://USER:PW@HOST/DB  postgresql.py   many workers on many machines
    journal:///FILE                       journal.py      Optuna's journal file on a shared file system
    grpc://HOST:PORT                      grpc.py         Optuna's storage proxy in front of a database
    mysql+DRIVER://USER:PW@HOST/DB        mysql.py        accepted as Optuna accepts it, not advertised

Each is a class of lpstudy.db.kinds.base.StudyStorage, whose object, made once from a URL, answers
for it: its URL rules (its local file, its read-only form, making its folder), its engine, how
Optuna's storage is opened on it (read-only, creating tables), its lock across processes (a flock
beside the file, a PostgreSQL advisory lock, none), how a dead worker is noticed (Optuna's heartbeats
or lpstudy's lease), the default artifact store, where learning curves live (the metrics table or
trial system attributes) and how its studies are read. What kinds share is in `sql` (SQLAlchemy and
Optuna's RDBStorage) and `files` (one local file). No module outside this package asks which kind a
URL is: it asks the storage.

Adding a kind is one module here with one class of StudyStorage (or of SqlStorage where it is one)
that has a `name`: KINDS finds it (kinds_in). Its local file, lock and reads are objects it composes
in (`file`, `locking`, `reads`).
"""

from __future__ import annotations

import importlib
import pkgutil

from lpstudy.db.kinds.base import StudyStorage
from lpstudy.db.urls import check_user_info, redact, storage_url
from lpstudy.errors import UserError


def kinds_in(package: str) -> tuple[type[StudyStorage], ...]:
    """The storage classes defined in the modules of package that have a name (the shared bases
    have none), in the order their URL forms are listed to a user (`listed`)."""
    found = []
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        loaded = importlib.import_module(f"{package}.{module.name}")
        found += [c for c in vars(loaded).values() if isinstance(c, type) and issubclass(c, StudyStorage)
                  and c.__module__ == loaded.__name__ and c.name]
    return tuple(sorted(found, key=lambda kind: (kind.listed, kind.name)))


# Every kind, in the order the forms are listed to a user whose URL is none of them.
KINDS: tuple[type[StudyStorage], ...] = kinds_in(__name__)

_forms = [kind.url_form for kind in KINDS if kind.url_form]
URL_FORMS = ", ".join(_forms[:-1]) + " or " + _forms[-1]


def storage_at(url: str | None, readonly: bool = False, retry_s: float | None = None) -> StudyStorage:
    """The storage at url (None: $LPSTUDY_STORAGE, else the default file), made once, nothing opened
    yet (lpstudy.db.kinds.base.StudyStorage says the arguments), after checking that the URL can be
    used (a port is a number, a file URL names a file, no unencoded '@' in a password); UserError
    with one line otherwise, before anything connects."""
    url = storage_url(url)
    check_user_info(url)
    for kind in KINDS:
        if kind.owns(url):
            return kind(url, readonly=readonly, retry_s=retry_s)
    raise UserError(f"storage URL {redact(url)!r} is not one of {URL_FORMS}{_meant(url)}")


# Schemes people write for a kind lpstudy reads under another: SQLAlchemy's and libpq's names of PostgreSQL.
MEANT_SCHEMES = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg", "pgsql": "postgresql+psycopg",
                 "postgresql+psycopg2": "postgresql+psycopg", "sqlite3": "sqlite"}


def _meant(url: str) -> str:
    """'; did you mean postgresql+psycopg://…?' for a URL whose scheme names a kind another way; '' otherwise."""
    scheme, sep, rest = url.partition("://")
    meant = MEANT_SCHEMES.get(scheme.lower()) if sep else None
    if meant is None:
        from lpstudy.names import did_you_mean

        schemes = {kind.url_form.split("://")[0] for kind in KINDS if kind.url_form}
        return did_you_mean(scheme, schemes) if sep else ""
    return f"; did you mean {redact(f'{meant}://{rest}')}?"


def open_reader(url: str | None) -> StudyStorage:
    """The storage at url for reading (read-only where the database allows it): the read side's one
    object (lpstudy.db.trial_reader says its reads). Nothing is opened until the first read."""
    return storage_at(url, readonly=True)
