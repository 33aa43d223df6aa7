"""Where a study's data lives: one URL, and every rule about it in one place.

    sqlite:///FILE                          embedded, the default (storage/lpstudy.db under the current folder)
    postgresql+psycopg://USER:PW@HOST/DB    shared, for many workers and machines
    journal:///FILE                         Optuna's journal file (no SQL: metrics go to trial attributes)
    grpc://HOST:PORT                        Optuna's gRPC storage proxy (`lpstudy storage-proxy`)

File URLs read as SQLite reads its own: three slashes and a relative path (sqlite:///storage/a.db),
four for an absolute one (sqlite:////srv/a.db). Resolving a URL never touches the disk; only
`prepare_to_create` makes the folder of a file that a study is about to be created in.
A URL is printed or logged only through `redact`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from lpstudy.errors import UserError

DEFAULT_STORAGE = "sqlite:///storage/lpstudy.db"
STORAGE_ENV = "LPSTUDY_STORAGE"
SQL_KINDS = ("sqlite", "postgresql", "mysql")
URL_FORMS = ("sqlite:///FILE, postgresql+psycopg://USER:PASSWORD@HOST/DB, journal:///FILE "
             "or grpc://HOST:PORT")
# Query parameters whose value is a secret (libpq's and the drivers' spellings).
_SECRET_PARAMS = re.compile(r"(?i)([?&](?:password|passwd|pass|pwd|sslpassword|secret|token)=)[^&#]*")


STORAGE_FILE_ENV = "LPSTUDY_STORAGE_FILE"


def storage_url(url: str | None = None, file: str | os.PathLike | None = None) -> str:
    """The storage URL to use: the argument, else the file named by the argument `file`
    (--storage-file), else $LPSTUDY_STORAGE, else the file named by $LPSTUDY_STORAGE_FILE, else the
    local SQLite file. A file keeps a password out of the command line of a long-lived process
    (a worker, a dashboard, the storage proxy), where `ps` would show it to every user."""
    if url:
        return url
    if file:
        return read_storage_file(file)
    if os.environ.get(STORAGE_ENV):
        return os.environ[STORAGE_ENV]
    if os.environ.get(STORAGE_FILE_ENV):
        return read_storage_file(os.environ[STORAGE_FILE_ENV])
    return DEFAULT_STORAGE


def read_storage_file(path: str | os.PathLike) -> str:
    """The storage URL held in a file (its first non-empty line; chmod 600 it)."""
    from lpstudy.paths import check_input_file

    path = check_input_file(path, "storage file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise UserError(f"storage file {path} cannot be read as UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise UserError(f"storage file {path} is empty; put the storage URL in it")
    return lines[0]


def storage_kind(url: str) -> str:
    """'sqlite', 'postgresql', 'mysql', 'journal' or 'grpc', after checking that the URL can be
    used (a port is a number, a file URL names a file); UserError with one line otherwise."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "journal":
        journal_path(url)
        return "journal"
    if scheme == "grpc":
        grpc_address(url)
        return "grpc"
    try:
        parsed = make_url(url)
        backend = parsed.get_backend_name()
        parsed.port  # noqa: B018 - SQLAlchemy parses the port lazily; a non-number raises here
    except ArgumentError:
        backend = ""
    except ValueError:  # the only part SQLAlchemy parses as a number
        raise UserError(f"storage URL {redact(url)!r}: the port must be a number in 1..65535") from None
    if backend not in SQL_KINDS:
        raise UserError(f"storage URL {redact(url)!r} is not one of {URL_FORMS}")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise UserError(f"storage URL {redact(url)!r}: port {parsed.port} is not in 1..65535")
    if backend == "sqlite":
        database = parsed.database
        if not database or database == ":memory:" or database.startswith("file::memory:"):
            raise UserError(f"storage URL {redact(url)!r} names no file (an in-memory database is lost "
                            "when the command ends); use sqlite:///PATH/TO/FILE.db")
    return backend


def is_sql(url: str) -> bool:
    return storage_kind(url) in SQL_KINDS


def redact(url: str) -> str:
    """The URL with every password replaced by ***: in the user-info (whatever characters it holds,
    '@' and ':' included) and in query parameters such as ?password=. The only form in which a URL
    is printed, logged or shown on a page."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return _SECRET_PARAMS.sub(r"\1***", text)
    before_query, qmark, query = rest.partition("?")
    at = before_query.rfind("@")
    if at >= 0:
        user, colon, _ = before_query[:at].partition(":")
        before_query = f"{user}{':***' if colon else ''}{before_query[at:]}"
    return _SECRET_PARAMS.sub(r"\1***", f"{scheme}://{before_query}{qmark}{query}")


def password_of(url: str) -> str | None:
    """The URL's password (user-info or query), to take out of error messages that quote it."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    password = parsed.password or parsed.query.get("password")
    if isinstance(password, tuple):
        password = password[0] if password else None
    return str(password) if password else None


def sqlite_path(url: str) -> Path:
    """The file of a SQLite URL (checked by storage_kind to name one)."""
    return Path(make_url(url).database).expanduser()


def journal_path(url: str, creating: bool = False) -> Path:
    """The file of a journal URL, read as SQLite reads its URLs (journal:///relative.log,
    journal:////absolute.log); journal:///absolute.log is taken as absolute when that file exists,
    or when creating it and only the absolute folder exists."""
    rest = url.split("://", 1)[1]
    if not rest.strip("/"):
        raise UserError(f"journal URL {url!r} names no file; use journal:///RELATIVE/PATH or "
                        "journal:////ABSOLUTE/PATH")
    relative = Path(rest[1:] if rest.startswith("/") else rest).expanduser()
    absolute = Path(rest).expanduser()
    if relative.exists() or not absolute.is_absolute():
        return relative
    if absolute.exists():
        return absolute
    if creating and not (relative.parent or Path(".")).is_dir() and absolute.parent.is_dir():
        return absolute
    return relative


def grpc_address(url: str) -> tuple[str, int]:
    """(host, port) of a grpc://HOST:PORT URL; UserError unless both are there."""
    rest = url.split("://", 1)[1].rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"gRPC storage URL {url!r} must be grpc://HOST:PORT")
    return host, int(port)


def readonly_url(url: str) -> str | URL:
    """A URL that cannot write, where the database allows it (SQLite's mode=ro, which also never
    creates the file). PostgreSQL is made read-only by its session (db.engines) and its role."""
    if storage_kind(url) != "sqlite":
        return url
    return f"sqlite:///file:{sqlite_path(url).resolve()}?mode=ro&uri=true"


def local_file(url: str, creating: bool = False) -> Path | None:
    """The file a SQLite or journal URL keeps its data in; None for a server."""
    kind = storage_kind(url)
    if kind == "sqlite":
        return sqlite_path(url)
    if kind == "journal":
        return journal_path(url, creating=creating)
    return None


def missing_file_message(url: str) -> str | None:
    """Why a SQLite or journal URL cannot be read (no such file, a folder), or None."""
    path = local_file(url)
    if path is None:
        return None
    if path.is_dir():
        return f"the storage {redact(url)} names a folder ({path}), not a database file"
    if not path.is_file():
        return (f"no study database at {path}; create a study first (`lpstudy create` or `lpstudy "
                "replicate`) or pass --storage / set LPSTUDY_STORAGE to the URL the workers use")
    if storage_kind(url) == "sqlite" and not is_sqlite_file(path):
        return f"{path} is not a SQLite database; check --storage / LPSTUDY_STORAGE"
    return None


SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """Whether path is a SQLite database (its 16-byte header; an empty file is an empty database)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return head in (b"", SQLITE_HEADER)


def prepare_to_create(url: str) -> Path | None:
    """Before a study is created in a SQLite or journal file: check that the file can be made, make
    its folder, and return the folder if it was made now (so that a failed create can remove it)."""
    path = local_file(url, creating=True)
    if path is None:
        return None
    if path.is_dir():
        raise UserError(f"the storage {redact(url)} names a folder ({path}), not a database file")
    made = None
    parent = path.parent
    for ancestor in [parent, *parent.parents]:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise UserError(f"cannot create {path}: {ancestor} is a file, not a folder")
            break
        made = ancestor
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the folder {parent} for {path}: {exc.strerror}") from None
    if not os.access(parent, os.W_OK):
        raise UserError(f"cannot write in {parent}; pick another --storage")
    return made
