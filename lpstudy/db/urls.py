"""Where a study's data lives: one URL.

    sqlite:///FILE                          embedded, the default (storage/lpstudy.db under the current folder)
    postgresql+psycopg://USER:PW@HOST/DB    shared, for many workers and machines
    journal:///FILE                         Optuna's journal file (no SQL: curves go to trial attributes)
    grpc://HOST:PORT                        Optuna's gRPC storage proxy (`lpstudy storage-proxy`)

Which URL to use (the option, a storage file, the environment, the default) and how to show one:
a URL is printed or logged only through `redact`, and a database error only through `first_line`.
What a URL of each kind means (its file, its read-only form, its rules) is its kind's to say
(lpstudy.db.kinds).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from lpstudy.errors import UserError

DEFAULT_STORAGE = "sqlite:///storage/lpstudy.db"
STORAGE_ENV = "LPSTUDY_STORAGE"
# Query parameters whose value is a secret (libpq's and the drivers' spellings).
_SECRET_PARAMS = re.compile(r"(?i)([?&](?:password|passwd|pass|pwd|sslpassword|secret|token)=)[^&#]*")


STORAGE_FILE_ENV = "LPSTUDY_STORAGE_FILE"


def storage_url(url: str | None = None, file: str | os.PathLike[str] | None = None) -> str:
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


def read_storage_file(path: str | os.PathLike[str]) -> str:
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
    _warn_if_others_read(path, lines[0])
    return lines[0]


def _warn_if_others_read(path: Path, url: str) -> None:
    """Warn, as libpq does of a .pgpass others can read, when the file holds a password and its
    mode lets the group or other users read it."""
    import stat
    import warnings

    mode = path.stat().st_mode
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO) and redact(url) != url:
        warnings.warn(f"storage file {path} holds a password and other users can read it "
                      f"(mode {stat.S_IMODE(mode):04o}); chmod 600 {path}", stacklevel=3)


def sql_backend(url: str) -> str:
    """The database a SQLAlchemy URL names, as SQLAlchemy reads it (postgresql for
    postgresql+psycopg://...: make_url(...).get_backend_name()), else ''. Only the scheme is read,
    so that a URL whose port is not a number still tells its kind, which then says what is wrong."""
    scheme, sep, _ = str(url).partition("://")
    if not sep:
        return ""
    try:
        return make_url(f"{scheme}://").get_backend_name()
    except (ArgumentError, ValueError):
        return ""


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


def unencoded_at_in_user_info(url: str) -> bool:
    """Whether the user name or password of a server URL holds an '@' that is not percent-encoded
    (USER:secr@et@HOST): the drivers split at the first '@' and would take the rest of the password
    for the host, and quote it in their errors. A file URL (scheme:///PATH) has no user-info: an '@'
    in its path is a file name's."""
    _, sep, rest = str(url).partition("://")
    if not sep or rest.startswith("/"):
        return False
    first_at = rest.find("@")
    if first_at < 0:
        return False
    after = [i for i in (rest.find(c, first_at) for c in "/?#") if i >= 0]
    authority = rest[:min(after)] if after else rest
    return authority.count("@") > 1


def check_user_info(url: str) -> None:
    """UserError, one line and before anything connects, for an unencoded '@' in the user-info."""
    if unencoded_at_in_user_info(url):
        raise UserError(f"storage URL {redact(url)!r} has an '@' in its user name or password: "
                        "percent-encode it as %40 (and ':' as %3A, '/' as %2F), e.g. "
                        "postgresql+psycopg://USER:secr%40et@HOST/DB")


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


def first_line(exc: BaseException, url: str | None = None) -> str:
    """The root cause of a database error in one line, without the URL's password."""
    root = exc
    seen = set()
    while root is not None and id(root) not in seen:
        seen.add(id(root))
        orig = getattr(root, "orig", None)
        if orig is not None:
            root = orig
            break
        nxt = root.__cause__ or root.__context__
        if nxt is None:
            break
        root = nxt
    text = str(root).strip()
    text = text.splitlines()[0] if text else type(root).__name__
    password = password_of(url) if url else None
    if password:
        text = text.replace(password, "***")
    return text[:300]
