"""One object per kind of storage, and the one function that tells a URL's kind.

    sqlite:///FILE                        sqlite.py       one machine, a few workers (the default)
    postgresql+psycopg://USER:PW@HOST/DB  postgresql.py   many workers on many machines
    journal:///FILE                       journal.py      Optuna's journal file on a shared file system
    grpc://HOST:PORT                      grpc.py         Optuna's storage proxy in front of a database
    mysql+DRIVER://USER:PW@HOST/DB        mysql.py        accepted as Optuna accepts it, not advertised

Each kind answers, for its URLs (base.StorageKind): its URL rules (does a URL belong to it, is it
usable, its local file, its read-only form, making its folder), its engine options, how Optuna's
storage is opened on it (read-only, creating tables), its lock across processes (a flock beside
the file, a PostgreSQL advisory lock, none), how a dead worker is noticed (Optuna's heartbeats or
lpstudy's lease), the default artifact store and where learning curves live (the metrics table or
trial system attributes). What kinds share is in `sql` (SQLAlchemy and Optuna's RDBStorage) and
`files` (one local file). No module outside this package asks which kind a URL is: it asks the kind.

Adding a kind is one module here (a StorageKind, or a SqlKind/FileKind where it is one) and one
line in KINDS below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lpstudy.db.kinds.base import StorageKind
from lpstudy.db.kinds.grpc import GRPC
from lpstudy.db.kinds.journal import JOURNAL
from lpstudy.db.kinds.mysql import MYSQL
from lpstudy.db.kinds.postgresql import POSTGRESQL
from lpstudy.db.kinds.sqlite import SQLITE
from lpstudy.db.urls import check_user_info, redact, storage_url
from lpstudy.errors import UserError

if TYPE_CHECKING:
    from lpstudy.db.trial_reader import TrialReader

# Every kind, in the order the forms are listed to a user whose URL is none of them.
KINDS: tuple[StorageKind, ...] = (SQLITE, POSTGRESQL, JOURNAL, GRPC, MYSQL)

_forms = [kind.url_form for kind in KINDS if kind.url_form]
URL_FORMS = ", ".join(_forms[:-1]) + " or " + _forms[-1]


def kind_of(url: str) -> StorageKind:
    """The kind of the storage at url, after checking that the URL can be used (a port is a number,
    a file URL names a file, no unencoded '@' in a password); UserError with one line otherwise,
    before anything connects."""
    check_user_info(url)
    for kind in KINDS:
        if kind.owns(url):
            kind.validate(url)
            return kind
    raise UserError(f"storage URL {redact(url)!r} is not one of {URL_FORMS}")


def open_reader(url: str | None) -> TrialReader:
    """The reader of the study database at url (None: $LPSTUDY_STORAGE, else the default file), as
    its kind reads (lpstudy.db.trial_reader); UserError for a URL that is no storage. Nothing is
    opened until the first read."""
    url = storage_url(url)
    return kind_of(url).reader(url)
