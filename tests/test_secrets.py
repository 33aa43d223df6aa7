"""No secret ever shows. A password is planted in the URL of a real PostgreSQL study database
(tests/pgserver.py) that every command reaches through --storage-file or $LPSTUDY_STORAGE_FILE;
then every output, log, export, report, dashboard page, stored attribute and the command lines
of every process (/proc/PID/cmdline, the worker's children included) are searched for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lpstudy.db.urls import redact
from tests.pgserver import _find, free_port
from tests.study_helpers import TINY, lp_env, wait_until_answers

SECRET = "Pl4nted-pw-7c1e"
APP = Path(__file__).resolve().parents[1] / "app"


@pytest.mark.parametrize("url, shown", [
    (f"postgresql+psycopg://w:{SECRET}@db/lp", "postgresql+psycopg://w:***@db/lp"),
    (f"postgresql+psycopg://w:a@b:{SECRET}@db:5432/lp", "postgresql+psycopg://w:***@db:5432/lp"),
    (f"postgresql+psycopg://w:{SECRET}:x@db/lp", "postgresql+psycopg://w:***@db/lp"),
    (f"postgresql+psycopg://db/lp?user=w&password={SECRET}", "postgresql+psycopg://db/lp?user=w&password=***"),
    (f"postgresql+psycopg://db/lp?PASSWORD={SECRET}&sslmode=require",
     "postgresql+psycopg://db/lp?PASSWORD=***&sslmode=require"),
    (f"mysql+pymysql://w:{SECRET}@db/lp?passwd={SECRET}", "mysql+pymysql://w:***@db/lp?passwd=***"),
    (f"grpc://w:{SECRET}@proxy:50051", "grpc://w:***@proxy:50051"),
    ("sqlite:///storage/lpstudy.db", "sqlite:///storage/lpstudy.db"),
])
def test_redact_hides_a_password_with_any_characters_in_user_info_and_query(url, shown):
    assert redact(url) == shown


# The planted password with an '@' in it, unencoded: the drivers would take what follows it for the host.
AT_SECRET = f"{SECRET[:7]}@{SECRET[7:]}"


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["status", "--study", "sec"],
    ["create", "--study", "sec", "--preset", "smoke"],
    ["dashboard", "--headless", "--port", "1"],
    ["worker", "--study", "sec", "--devices", "cpu"],
    ["export", "--study", "sec"],
])
@pytest.mark.parametrize("url, refusal", [
    (f"postgresql+psycopg://w:{AT_SECRET}@127.0.0.1:1/lp",
     "lpstudy: error: storage URL 'postgresql+psycopg://w:***@127.0.0.1:1/lp' has an '@' in its user name "
     "or password: percent-encode it as %40"),
    (f"grpc://w:{SECRET}@127.0.0.1:1",
     "lpstudy: error: gRPC storage URL 'grpc://w:***@127.0.0.1:1' must be grpc://HOST:PORT, without a user "
     "or password"),
], ids=["unencoded-at", "grpc-user-info"])
def test_a_password_the_url_cannot_carry_is_refused_before_connecting(command, url, refusal, tmp_path):
    env = {k: v for k, v in lp_env().items() if k != "LPSTUDY_STORAGE"}
    done = subprocess.run([sys.executable, "-m", "lpstudy", *command, "--storage", url], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith(refusal) and done.stderr.count("\n") == 1, done.stderr  # one line
    for part in (SECRET[:7], SECRET[7:]):  # neither side of the '@', e.g. in a driver's "host not found"
        assert part not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.slow
def test_an_unreachable_grpc_proxy_is_one_line_without_a_warning(tmp_path):
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "lpstudy", "status", "--study", "sec", "--storage",
                           f"grpc://127.0.0.1:{port}"], capture_output=True, text=True, env=lp_env(),
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 75  # nothing answers: an outage (EX_TEMPFAIL), not a mistake in the input
    # Optuna's ExperimentalWarning for the proxy added a source path and a line of code before
    assert done.stderr == (f"lpstudy: error: no storage proxy answers at grpc://127.0.0.1:{port} within 5 s; "
                           "start one with `lpstudy storage-proxy` or check --storage\n")


def test_a_warning_is_one_line_without_its_source(capsys):
    import warnings

    from lpstudy.cli import one_line_warning

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = one_line_warning
        warnings.warn("the proxy is experimental\nsecond line", UserWarning)
    assert capsys.readouterr().err == "lpstudy: warning: the proxy is experimental\n"


def _cmdlines(pid: int) -> str:
    """The command lines of pid and all its descendants, as text."""
    text, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            text.append(Path(f"/proc/{current}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return "\n".join(text)



def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8", "replace")


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        return proc.communicate(timeout=30)[0] or ""
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0] or ""


def _serve(args: list[str], env: dict, ready: str, cwd: Path) -> tuple[subprocess.Popen, str, str]:
    """Start a long-lived command, wait until `ready` answers; (process, its command lines, page)."""
    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    try:
        wait_until_answers(ready, proc)
        return proc, _cmdlines(proc.pid), _get(ready)
    except BaseException:
        _stop(proc)
        raise


@pytest.mark.slow
def test_a_planted_password_shows_nowhere(postgres, tmp_path):
    database = "secrets_db"
    postgres.psql(f'CREATE DATABASE "{database}"')
    url = postgres.url(database, "postgres", SECRET)  # the test server trusts; the password is still sent
    url_file = tmp_path / "storage.url"
    url_file.write_text(url + "\n")
    url_file.chmod(0o600)
    env = {k: v for k, v in lp_env().items() if k != "LPSTUDY_STORAGE"}
    file_env = {**env, "LPSTUDY_STORAGE_FILE": str(url_file)}
    seen: list[str] = []  # every output and page, and every file written

    def run(*args: str, environment=file_env) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "lpstudy", *args], capture_output=True, text=True,
                              env=environment, cwd=tmp_path, timeout=300)
        seen.extend([done.stdout, done.stderr])
        assert done.returncode == 0, done.stderr
        return done

    run("create", "--study", "sec", "--storage-file", str(url_file), "--preset", "smoke", *TINY,
        "--sampler", "random", "--pruner", "none", environment=env)
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = subprocess.Popen([sys.executable, "-m", "lpstudy", "worker", "--study", "sec", "--storage-file",
                                   str(url_file), "--devices", "cpu,cpu", "--n-trials", "2", "--no-progress"],
                                  stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
        cmdlines = []
        while worker.poll() is None:
            cmdlines.append(_cmdlines(worker.pid))
            time.sleep(0.2)
    assert worker.returncode == 0, log.read_text()
    assert any(line.count("lpstudy worker") >= 1 for line in cmdlines)
    seen += cmdlines + [log.read_text()]

    status = run("status", "--study", "sec", "--json")
    assert json.loads(status.stdout)["counts"]["COMPLETE"] == 2
    run("status", "--study", "sec")
    run("export", "--study", "sec")
    run("export", "--study", "sec", "-o", "best.yaml")
    run("report", "--study", "sec", "-o", "report.html")
    seen += [(tmp_path / "best.yaml").read_text(), (tmp_path / "report.html").read_text()]

    # The long-lived processes: their command lines, what they print, what they serve.
    port = free_port()
    proxy = subprocess.Popen([sys.executable, "-m", "lpstudy", "storage-proxy", "--storage-file", str(url_file),
                              "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env, cwd=tmp_path)
    try:
        first = proxy.stdout.readline()
        assert "serving postgresql+psycopg://postgres:***@" in first, first
        seen += [first, _cmdlines(proxy.pid)]
        through_proxy = run("status", "--study", "sec", "--storage", f"grpc://127.0.0.1:{port}", environment=env)
        assert "Warning" not in through_proxy.stderr, through_proxy.stderr
    finally:
        seen.append(_stop(proxy))

    port = free_port()
    od, lines, page = _serve(["optuna-dashboard", "--storage-file", str(url_file), "--port", str(port)],
                             env, f"http://127.0.0.1:{port}/api/meta", tmp_path)
    try:
        seen += [lines, page, _get(f"http://127.0.0.1:{port}/api/studies"), _get(f"http://127.0.0.1:{port}/")]
    finally:
        seen.append(_stop(od))

    port = free_port()
    st, lines, page = _serve(["dashboard", "--storage-file", str(url_file), "--port", str(port), "--headless"],
                             env, f"http://127.0.0.1:{port}/_stcore/health", tmp_path)
    try:
        seen += [lines, page, _get(f"http://127.0.0.1:{port}/")]
    finally:
        seen.append(_stop(st))

    # What the dashboard's pages show (Streamlit renders them in the browser; AppTest runs them here).
    seen += _dashboard_pages(url)

    # What the database keeps: nothing a worker stored holds the URL.
    dump = postgres._run(_find("pg_dump"), "-h", "127.0.0.1", "-p", str(postgres.port), "-U", "postgres",
                         "--data-only", database).stdout
    assert "sec" in dump
    seen.append(dump)

    leaks = [text[max(0, text.find(SECRET) - 80):text.find(SECRET) + 20] for text in seen if SECRET in text]
    assert not leaks, leaks
    assert any("postgres:***@" in text for text in seen)  # the URL was shown, redacted


def _dashboard_pages(url: str) -> list[str]:
    from streamlit.testing.v1 import AppTest

    pages = ["views/home.py", "views/effect_of_p.py", "views/convergence.py", "views/stability.py",
             "views/trials.py", "views/export.py"]
    shown = []
    old = os.environ.get("LPSTUDY_STORAGE")
    os.environ["LPSTUDY_STORAGE"] = url
    try:
        for page in pages:
            at = AppTest.from_file(str(APP / "dashboard.py"), default_timeout=60)
            at.run()
            if page != "views/home.py":
                at.switch_page(page).run()
            assert not at.exception, page
            shown += [str(node.proto) for node in _walk(at.main) + _walk(at.sidebar) if hasattr(node, "proto")]
    finally:
        if old is None:
            os.environ.pop("LPSTUDY_STORAGE", None)
        else:
            os.environ["LPSTUDY_STORAGE"] = old
    assert any("postgres:***@" in text.replace("\\", "") for text in shown)  # the sidebar: redacted
    return shown


def _walk(node) -> list:
    out = [node]
    for child in getattr(node, "children", {}).values():
        out += _walk(child)
    return out
