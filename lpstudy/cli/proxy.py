"""`lpstudy storage-proxy`: Optuna's gRPC storage proxy in front of the study database.

Every worker holds its own pool of database connections, so thousands of them exhaust PostgreSQL's
`max_connections`. The proxy holds one pool and serves the workers over gRPC; they take
`--storage grpc://HOST:PORT` (or LPSTUDY_STORAGE) instead of the database URL. The proxy has no
authentication of its own: whoever reaches its port can read and write every study, so listen on a
private network only.

Beside Optuna's methods the proxy serves lpstudy's own (lpstudy.db.proxy_calls): a grid worker's
claim, counts and lease check, each one SQL query on the proxy's side instead of a read of every
unfinished trial through Optuna's client.
"""

from __future__ import annotations

import signal
import socket
import sys
from typing import Annotated

import typer

from lpstudy.cli import app
from lpstudy.cli.check_mode import CheckOpt, check_server
from lpstudy.errors import UserError
from lpstudy.cli.common import check_port_free
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.db.kinds import storage_at
from lpstudy.db.urls import redact

DEFAULT_PORT = 13000
_ALL_INTERFACES = ("0.0.0.0", "::", "[::]", "")


@app.command("storage-proxy")
@option_groups
def storage_proxy(
    *,
    storage: StorageChoice,
    host: Annotated[str, typer.Option(
        help="Address to listen on; 0.0.0.0 for every interface (keep those behind a firewall).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = DEFAULT_PORT,
    threads: Annotated[int, typer.Option(
        help="Requests served at once (each may hold one database connection).", min=1)] = 10,
    check: CheckOpt = False,
) -> None:
    """Serve the study database to workers over gRPC (Optuna's storage proxy): grpc://HOST:PORT.
    --storage names a SQL database, e.g. postgresql+psycopg://USER:PASSWORD@HOST/DB."""
    if check:
        check_server("storage-proxy", storage, host, port, readonly=False)
    served = storage_at(storage.url())
    served.check_proxy_target()
    url = served.url
    check_port_free(host, port)

    import warnings

    import optuna

    from lpstudy.db.optuna_storage import make_proxy_server

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # SIGTERM (docker stop, scancel) ends the proxy as Ctrl-C does: an exit, not a crash. gRPC accepts
    # connections once it binds the port, before start(), and whoever sees the port open may stop the
    # proxy at once: the handler is set before, and SIGTERM held until the address is printed.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # the mask before: restored below
    server = None
    try:
        try:
            server = make_proxy_server(served, host, port, threads)
        except RuntimeError as exc:  # grpc could not bind after all (a race for the port)
            raise UserError(f"cannot listen on {host}:{port} ({exc}); choose another --port") from None
        print(f"lpstudy storage-proxy: serving {redact(url)} at grpc://{_display_host(host)}:{port} "
              f"({threads} threads); workers: lpstudy worker --storage grpc://{_advertised_host(host)}:{port}",
              flush=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # one sent meanwhile arrives here
        server.start()
        server.wait_for_termination()
    except KeyboardInterrupt:
        if server is not None:
            server.stop(grace=5).wait()
        print("lpstudy storage-proxy: stopped", file=sys.stderr, flush=True)
    finally:  # never leave SIGTERM held (a refusal above): every process started from here would inherit it
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _advertised_host(host: str) -> str:
    """The name workers on other machines use: this machine's name where the proxy listens everywhere."""
    return socket.gethostname() if host in _ALL_INTERFACES else _display_host(host)


def _raise_keyboard_interrupt(signum, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt
