"""`lpstudy storage-proxy`: workers that reach the database only through Optuna's gRPC proxy
complete a grid with each cell once; the proxy shows its address and never the password."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from sqlalchemy.engine import make_url

from tests.study_helpers import TINY, TINY_EVALS, lp_env
from tests.pgserver import free_port, wait_for_port
from lpstudy.db.kinds import open_reader

LPSTUDY = [sys.executable, "-m", "lpstudy"]
PASSWORD = "pr0xy-s3cret"  # the test server trusts every connection; the proxy must still hide it



def with_password(url: str) -> str:
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


class RunningProxy:
    """`lpstudy storage-proxy` in front of a database, as a user starts it; stop() returns its output."""

    def __init__(self, database_url: str) -> None:
        self.port = free_port()
        self.grpc_url = f"grpc://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [*LPSTUDY, "storage-proxy", "--storage", with_password(database_url),
             "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=lp_env())
        wait_for_port(self.port, f"the proxy on port {self.port}", 60, exited=lambda: self.process.poll() is not None
                      and f"the proxy exited with {self.process.returncode}: {self.process.stdout.read()}")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        return out


@pytest.fixture
def proxy(pg_url):
    running = RunningProxy(pg_url)
    yield running
    running.stop()


@pytest.mark.slow
@pytest.mark.postgres
def test_two_workers_through_the_proxy_complete_a_grid_with_each_cell_once(proxy, pg_url):
    from lpstudy.results.reading.frames import load_study, load_trials

    grpc_url = proxy.grpc_url
    create = subprocess.run(
        [*LPSTUDY, "replicate", "--study", "grid", "--storage", grpc_url, "--preset", "smoke",
         "--p", "2,3", "--folds", "2", *TINY],
        capture_output=True, text=True, timeout=120, env=lp_env())
    assert create.returncode == 0, create.stderr
    workers = [subprocess.Popen([*LPSTUDY, "worker", "--study", "grid", "--storage", grpc_url, "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=lp_env())
               for _ in range(2)]
    for worker in workers:
        _, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err

    trials = load_trials(open_reader(pg_url), "grid")  # straight from the database behind the proxy
    assert list(trials["state"]) == ["COMPLETE"] * 4
    cells = sorted(zip(trials["p"].astype(float), trials["fold"].astype(int)))
    assert cells == [(2.0, 0), (2.0, 1), (3.0, 0), (3.0, 1)]
    # Every evaluation's metrics came through too (as trial attributes), for the dashboards.
    curves = load_study(open_reader(pg_url), "grid").curves
    assert curves.groupby("trial_number").size().tolist() == [TINY_EVALS] * 4


@pytest.mark.postgres
def test_the_proxy_prints_its_address_never_the_password_and_stops_on_sigterm(proxy):
    out = proxy.stop()
    assert proxy.process.returncode == 0, out
    assert f"at {proxy.grpc_url}" in out and f"--storage {proxy.grpc_url}" in out
    assert ":***@127.0.0.1" in out and PASSWORD not in out


def test_the_proxy_refuses_a_storage_it_cannot_serve():
    out = subprocess.run([*LPSTUDY, "storage-proxy", "--storage", "journal:///tmp/lpstudy-journal.log"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("lpstudy: error:") and len(out.stderr.strip().splitlines()) == 1
    assert "SQL database" in out.stderr


def test_an_unreachable_database_is_one_line_without_the_password():
    url = f"postgresql+psycopg://lpstudy_writer:{PASSWORD}@127.0.0.1:{free_port()}/lpstudy"
    out = subprocess.run([*LPSTUDY, "storage-proxy", "--storage", url, "--port", str(free_port())],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 75  # nothing answers: an outage (EX_TEMPFAIL), not a mistake in the input
    assert len(out.stderr.strip().splitlines()) == 1 and "cannot open the study database" in out.stderr
    assert PASSWORD not in out.stdout + out.stderr
    assert "lpstudy_writer:***@127.0.0.1" in out.stderr


def test_a_port_in_use_is_one_line(sqlite_url):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        out = subprocess.run([*LPSTUDY, "storage-proxy", "--storage", sqlite_url, "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "--port" in out.stderr


def test_a_refused_proxy_leaves_sigterm_as_it_found_it(sqlite_url, capsys, monkeypatch):
    """The proxy holds SIGTERM while it binds its port (tests above); where it is refused there, the
    process's signal mask is as it was: a held SIGTERM would be inherited by every process started
    from it afterwards (a worker, a dashboard), which then could not be stopped."""
    import signal

    from lpstudy.db import optuna_storage
    from tests.study_helpers import cli

    def cannot_bind(*args, **kwargs):
        raise RuntimeError("Failed to bind")

    monkeypatch.setattr(optuna_storage, "make_proxy_server", cannot_bind)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    handler = signal.getsignal(signal.SIGTERM)
    try:
        code, _, err = cli(capsys, "storage-proxy", "--storage", sqlite_url, "--port", str(free_port()))
        assert code == 2 and "cannot listen on" in err, err
        assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before
    finally:
        signal.signal(signal.SIGTERM, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
