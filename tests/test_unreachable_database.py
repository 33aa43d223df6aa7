"""A database that cannot be reached is no user's mistake: after the retry budget
(LPSTUDY_STORAGE_RETRY_S) the command exits 75 (EX_TEMPFAIL) with one line that says so, so that a Job
retries it; a creator waits for a database that starts late; a bad value of the knob is one line and
exit 2. Real refused ports, a real SQLite lock, a real PostgreSQL server started late."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.pgserver import ThrowawayPostgres, free_port
from tests.study_helpers import cli, lp_env, lpstudy, open_study

SECRET = "s3cret-pw"


def refused_url() -> str:
    return f"postgresql+psycopg://writer:{SECRET}@127.0.0.1:{free_port()}/lp"  # nothing listens there


def without_knob() -> dict[str, str]:
    return {k: v for k, v in lp_env().items() if k != "LPSTUDY_STORAGE_RETRY_S"}


@pytest.mark.parametrize("command", [["create", "--preset", "smoke"], ["worker", "--devices", "cpu"],
                                     ["replicate", "--preset", "smoke", "--p", "2", "--folds", "2"]])
@pytest.mark.slow
def test_a_refused_port_exits_75_after_the_retry_budget_with_one_line(command):
    url = refused_url()
    shown = url.replace(SECRET, "***")
    done = lpstudy(command[0], "--study", "s", *command[1:], "--storage", url,
                   env=lp_env(LPSTUDY_STORAGE_RETRY_S="1"))
    assert done.returncode == 75, done.stderr
    *noted, last = done.stderr.splitlines()
    # the note of the wait, said when the first retry begins (none when the first try took the budget)
    assert noted in ([], [f"lpstudy: storage {shown} unreachable (connection failed: connection to server at "
                          f"\"127.0.0.1\", port {url.rsplit(':', 1)[1].split('/')[0]} failed: Connection refused); "
                          "retrying for up to 1 s"]), done.stderr
    assert re.match(re.escape(f"lpstudy: error: the study database {shown} could not be reached: it stayed "
                              "unreachable for ") + r"\d+ s \(connection failed:", last), last
    assert last.endswith("Connection refused); check that it is running and reachable at that address, then "
                         "run the command again (LPSTUDY_STORAGE_RETRY_S sets how long to wait, now 1 s)"), last
    assert SECRET not in done.stdout + done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["status"], ["export"]])
def test_a_reader_on_a_refused_port_exits_75_at_once(command):
    url = refused_url()
    done = lpstudy(command[0], "--study", "s", "--storage", url)
    assert done.returncode == 75
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        f"lpstudy: error: cannot read the study database at {url.replace(SECRET, '***')}: connection failed:")
    assert "Connection refused" in done.stderr and SECRET not in done.stderr


@pytest.mark.slow
def test_a_worker_waits_600_s_by_default_and_a_creator_120_s():
    url = refused_url()
    for command, budget in ((["worker", "--study", "s", "--devices", "cpu"], 600), (["create", "--study", "s"], 120)):
        proc = subprocess.Popen([sys.executable, "-m", "lpstudy", *command, "--storage", url], env=without_knob(),
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        try:
            first = proc.stderr.readline()  # said as the first try fails; then it waits
            assert first.endswith(f"Connection refused); retrying for up to {budget} s\n"), first
            assert proc.poll() is None  # still waiting
        finally:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_a_worker_waiting_for_its_spec_exits_75_when_the_database_is_lost(tmp_path):
    study_file = tmp_path / "study.yaml"
    study_file.write_text("preset: smoke\n")
    done = lpstudy("worker", "--study", "s", "--devices", "cpu", "--storage", refused_url(), "--config",
                   str(study_file), "--wait-for-spec-s", "600", env=lp_env(LPSTUDY_STORAGE_RETRY_S="1"))
    assert done.returncode == 75 and re.search(r"could not be reached: it stayed unreachable for \d+ s", done.stderr)
    assert "waiting up to" not in done.stderr  # an outage is no study that has not appeared yet


@pytest.mark.slow
def test_a_sqlite_file_locked_by_another_process_past_the_budget_exits_75(tmp_path, capsys, monkeypatch):
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    code, _, err = cli(capsys, "create", "--study", "first", "--storage", url, "--preset", "smoke")
    assert code == 0, err
    holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's long write: no one else reads or writes
    try:
        monkeypatch.setenv("LPSTUDY_STORAGE_RETRY_S", "1")
        code, _, err = cli(capsys, "create", "--study", "second", "--storage", url, "--preset", "smoke")
    finally:
        holder.rollback()
        holder.close()
    assert code == 75, err
    assert err.splitlines()[-1].startswith(f"lpstudy: error: the study database {url} could not be reached")
    assert "database is locked" in err.splitlines()[-1]
    monkeypatch.delenv("LPSTUDY_STORAGE_RETRY_S")
    code, _, err = cli(capsys, "create", "--study", "second", "--storage", url, "--preset", "smoke")
    assert code == 0, err  # the lock gone, the same command succeeds


@pytest.mark.parametrize("text", ["abc", "-1", "nan", "inf", "10s"])
@pytest.mark.parametrize("command", [["create", "--preset", "smoke"], ["worker", "--devices", "cpu"]])
def test_a_bad_retry_budget_is_one_line_and_exit_2(text, command, sqlite_url, capsys, monkeypatch):
    monkeypatch.setenv("LPSTUDY_STORAGE_RETRY_S", text)
    code, _, err = cli(capsys, command[0], "--study", "s", *command[1:], "--storage", sqlite_url)
    assert code == 2 and err == (f"lpstudy: error: LPSTUDY_STORAGE_RETRY_S must be a number of seconds >= 0 "
                                 f"(how long to wait for an unreachable database), got {text!r}\n")


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(400)
def test_a_creator_survives_a_database_that_starts_60_s_late_at_the_default_budget():
    server = ThrowawayPostgres()
    try:
        server.start()  # initdb now, so that the late start below is PostgreSQL's own start
        server.stop()
        url = server.url("postgres")
        creator = subprocess.Popen([sys.executable, "-m", "lpstudy", "create", "--study", "late", "--preset",
                                    "smoke", "--storage", url], env=without_knob(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(60)
        assert creator.poll() is None, creator.communicate()  # still waiting for the database
        server.start()
        out, err = creator.communicate(timeout=240)
        assert creator.returncode == 0, err
        assert "retrying for up to 120 s" in err and "study 'late' created" in err
        back = re.search(r"storage back after ([0-9.]+) s", err)
        # it did wait for the late start, not find it up: down from its first try, 60 s after it was
        # started less its own start-up (Python's imports took over a second on a loaded machine)
        assert back and float(back.group(1)) >= 50, err
        study, spec = open_study(url, "late")
        assert spec.preset == "smoke"
        from lpstudy.study.studies import spec_sha256

        assert study._storage.get_study_system_attrs(study._study_id)["lpstudy_spec_sha256"] == \
            spec_sha256(spec.to_plain())
    finally:
        server.cleanup()
