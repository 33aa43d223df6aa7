"""Wait until the database of $LPSTUDY_STORAGE accepts its user, then exit 0: an init container.

    LPSTUDY_STORAGE="$(cat writer-url)" python wait-for-database.py   # the URL, from the Secret
    python wait-for-database.py --check   # its settings only: the URL parsed, nothing connects

Connects as the URL's user and runs SELECT 1, every $LPSTUDY_WAIT_INTERVAL_S seconds (default 2)
until it works, with one line each time it does not (the URL with its password replaced by ***,
and the driver's reason: server not up yet, role missing, wrong password). It waits for the server
and for the roles both: the official postgres image listens on TCP only once its init scripts,
which create the roles, have run. The URL comes from the environment (a Secret), never the command
line. It never gives up: a pod that stays in Init says why in its log. SIGTERM ends it at once
(exit 143): as a container's first process it would otherwise ignore the signal, and a deleted pod
would wait out its whole grace period.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import sqlalchemy as sa
from sqlalchemy.engine import make_url


def reason(exc: BaseException, password: str | None) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line.replace(password, "***") if password else line


def stop_on_sigterm() -> None:
    """A container's first process gets no default signal handling from the kernel: without a
    handler, SIGTERM is ignored and only SIGKILL, a grace period later, ends the wait."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def main(argv: list[str]) -> int:
    stop_on_sigterm()
    url = os.environ.get("LPSTUDY_STORAGE", "")
    if not url:
        print("wait-for-database: set LPSTUDY_STORAGE (from the Secret) to the database URL", file=sys.stderr)
        return 2
    try:
        parsed = make_url(url)
        timeout = {"connect_timeout": 5} if parsed.get_backend_name() == "postgresql" else {}
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args=timeout)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as exc:
        print(f"wait-for-database: LPSTUDY_STORAGE is not a database URL this image can open ({exc})",
              file=sys.stderr)
        return 2
    shown = parsed.render_as_string(hide_password=True)
    try:
        interval = float(os.environ.get("LPSTUDY_WAIT_INTERVAL_S", "2"))
    except ValueError:
        print("wait-for-database: LPSTUDY_WAIT_INTERVAL_S must be a number of seconds", file=sys.stderr)
        return 2
    if "--check" in argv:  # the settings only: the URL parsed, its driver loaded; nothing connects
        print(f"wait-for-database --check: ok · {shown} · every {interval:g} s", flush=True)
        return 0
    started = time.monotonic()
    while True:
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except (sa.exc.DBAPIError, OSError) as exc:
            print(f"wait-for-database: {shown} not ready: {reason(exc, parsed.password)}", flush=True)
            time.sleep(interval)
            continue
        print(f"wait-for-database: {shown} answers (after {time.monotonic() - started:.0f} s)", flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
