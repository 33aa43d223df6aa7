"""A throwaway PostgreSQL server for the tests: initdb in a temporary folder, trust authentication,
a free port on 127.0.0.1. PostgreSQL refuses to run as root, so as root it runs as `postgres`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, what: str, timeout: float = 30, exited=lambda: None) -> None:
    """Until something listens on 127.0.0.1:port; RuntimeError naming `what` after timeout seconds,
    or at once when exited() returns a message (the server's process ended)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        gone = exited()
        if gone:
            raise RuntimeError(gone)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen within {timeout:g} s")


class ConnectionCounter:
    """The server's connections to one database (pg_stat_activity), on one connection of its own,
    which is left out of the count."""

    def __init__(self, admin_url: str, database: str) -> None:
        import sqlalchemy as sa

        self._engine = sa.create_engine(admin_url, poolclass=sa.pool.NullPool)
        # AUTOCOMMIT: within one transaction PostgreSQL answers pg_stat_activity from one snapshot
        self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        self._query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()")
        self.database = database

    def count(self) -> int:
        return int(self._conn.execute(self._query, {"d": self.database}).scalar_one())

    def close(self) -> None:
        self._conn.close()
        self._engine.dispose()


def _find(binary: str) -> str:
    found = shutil.which(binary)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{binary}"), reverse=True):
        return str(candidate)
    raise RuntimeError(f"PostgreSQL's {binary} was not found; install it (apt-get install -y postgresql)")


class ThrowawayPostgres:
    def __init__(self, max_connections: int = 200) -> None:
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="lpstudy-pg-"))
        self.datadir = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
            self.root.chmod(0o700)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = list(args)
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def start(self) -> "ThrowawayPostgres":
        if not self.datadir.exists():
            self._run(_find("initdb"), "-D", str(self.datadir), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8")
        self._run(_find("pg_ctl"), "-D", str(self.datadir), "-l", str(self.root / "server.log"), "-w",
                  "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                        f"-c max_connections={self.max_connections}",
                  "start")
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 30) -> None:
        try:
            wait_for_port(self.port, "PostgreSQL", timeout)
        except RuntimeError:
            raise RuntimeError(f"PostgreSQL did not start; see {self.root / 'server.log'}") from None

    def stop(self, mode: str = "fast") -> None:
        self._run(_find("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "stop", check=False)

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def create_database(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def psql(self, sql: str, database: str = "postgres", user: str = "postgres") -> str:
        out = self._run(_find("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", user, "-d", database,
                        "-v", "ON_ERROR_STOP=1", "-At", "-c", sql)
        return out.stdout

    def url(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql+psycopg://{auth}@127.0.0.1:{self.port}/{database}"

    def connection_counter(self, database: str) -> ConnectionCounter:
        """A counter of this server's connections to `database` (see ConnectionCounter)."""
        return ConnectionCounter(self.url(), database)

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
