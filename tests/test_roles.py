"""Least privilege, tried against a real PostgreSQL (tests/pgserver.py) with the roles of
storage/init/10-lpstudy-roles.sh: the read-only role writes nothing, large objects included, even
after it turns its session's read-only default off, and connects to the study database only. The
passwords are stored as SCRAM verifiers the script computed, and reach neither a command line nor
the server's log."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess

import psycopg
import pytest
import sqlalchemy as sa

from tests.test_deploy import run_init_script

SESSION_SWITCHES = [
    "SET default_transaction_read_only = off",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "SET TRANSACTION READ WRITE",
]
LARGE_OBJECT_WRITES = [
    "SELECT lo_from_bytea(0, 'x'::bytea)",
    "SELECT lo_create(0)",
    "SELECT lo_creat(-1)",
    "SELECT lo_import('/etc/hostname')",
    "SELECT lo_put(1, 0, 'x'::bytea)",
    "SELECT lo_unlink(1)",
]


@pytest.fixture(scope="module")
def roles(postgres):
    database = "roles_db"
    postgres.psql(f'CREATE DATABASE "{database}"')
    run_init_script(postgres, database, "rw_writer", "ro_reader")
    yield postgres, database
    # the other tests' databases stay reachable for the superuser they use


@pytest.mark.parametrize("switch", SESSION_SWITCHES)
@pytest.mark.parametrize("sql", LARGE_OBJECT_WRITES)
def test_the_reader_cannot_write_large_objects_even_after_switching_its_session(roles, switch, sql):
    postgres, database = roles
    engine = sa.create_engine(postgres.url(database, "ro_reader", "reader-pw"))
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(switch)
            if switch.startswith("SET TRANSACTION"):
                pass
            else:  # the switch took: a fresh transaction is read-write now
                conn.commit()
                assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "off"
                conn.exec_driver_sql("SET TRANSACTION READ WRITE")
            with pytest.raises(sa.exc.ProgrammingError) as refused:
                conn.exec_driver_sql(sql)
            assert isinstance(refused.value.orig, psycopg.errors.InsufficientPrivilege), sql
    finally:
        engine.dispose()
    assert postgres.psql("SELECT count(*) FROM pg_largeobject_metadata", database=database).strip() == "0"


@pytest.mark.parametrize("other", ["postgres", "template1"])
@pytest.mark.parametrize("role", ["ro_reader", "rw_writer"])
def test_the_roles_connect_to_the_study_database_only(roles, role, other):
    postgres, database = roles
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=role, dbname=database) as conn:
        assert conn.execute("SELECT current_database()").fetchone()[0] == database
    with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
        psycopg.connect(host="127.0.0.1", port=postgres.port, user=role, dbname=other).close()


def test_the_writer_still_does_its_job(roles):
    """Creating Optuna's tables and a study, as `lpstudy create` does, is untouched by the revokes."""
    from lpstudy.db.optuna_storage import open_storage

    postgres, database = roles
    storage = open_storage(postgres.url(database, "rw_writer", "writer-pw"), create_tables=True)
    storage.optuna.create_new_study([__import__("optuna").study.StudyDirection.MINIMIZE], "roles-check")
    reader = open_storage(postgres.url(database, "ro_reader", "reader-pw"), readonly=True)
    assert [s.study_name for s in reader.optuna.get_all_studies()] == ["roles-check"]


# --- passwords: a SCRAM verifier computed by the script, never the password itself ----------------


def scram_keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """StoredKey and ServerKey of RFC 5802 with SHA-256 (RFC 7677), from Python's hashlib: an
    oracle independent of the script's perl."""
    import hashlib
    import hmac

    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    server = hmac.new(salted, b"Server Key", "sha256").digest()
    return stored, server


def stored_verifier(postgres, role: str) -> str:
    return postgres.psql(f"SELECT rolpassword FROM pg_authid WHERE rolname = '{role}'").strip()


def test_each_role_gets_a_scram_verifier_of_its_password_with_a_salt_of_its_own(roles):
    import base64

    postgres, _ = roles
    salts = set()
    for role, password in (("rw_writer", "writer-pw"), ("ro_reader", "reader-pw")):
        verifier = stored_verifier(postgres, role)
        match = re.fullmatch(r"SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)", verifier)
        assert match, verifier
        iterations, salt, stored, server = int(match[1]), *(base64.b64decode(g) for g in match.groups()[1:])
        assert iterations >= 4096 and len(salt) == 16
        assert (stored, server) == scram_keys(password, salt, iterations), role
        assert (stored, server) != scram_keys(password + "x", salt, iterations)
        salts.add(salt)
    assert len(salts) == 2


@pytest.fixture
def scram_only(roles):
    """The throwaway server asks the two roles for their password (SCRAM-SHA-256) from 127.0.0.1
    while the test runs; the other tests' roles keep trust."""
    postgres, database = roles
    hba = postgres.datadir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text("host all rw_writer,ro_reader 127.0.0.1/32 scram-sha-256\n" + original)
    postgres.psql("SELECT pg_reload_conf()")
    try:
        yield postgres, database
    finally:
        hba.write_text(original)
        postgres.psql("SELECT pg_reload_conf()")


def test_a_server_that_asks_for_passwords_lets_each_role_in_with_its_own_only(scram_only):
    postgres, database = scram_only
    for role, password in (("rw_writer", "writer-pw"), ("ro_reader", "reader-pw")):
        with psycopg.connect(host="127.0.0.1", port=postgres.port, user=role, password=password,
                             dbname=database) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == role
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(host="127.0.0.1", port=postgres.port, user=role, password="wrong",
                            dbname=database).close()


def test_no_password_reaches_a_command_line_or_the_servers_log(postgres, tmp_path):
    """Every process the script starts, with its arguments (strace), and every statement the server
    logs (log_statement = all, as a managed service logs DDL): the passwords are in none of them.
    The passwords come from files here, as docker compose's secrets give them."""
    from tests.test_deploy import INIT_SCRIPT, _init_env

    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed (apt-get install strace; .ci/run does)")
    database = "roles_logged"
    postgres.psql(f'CREATE DATABASE "{database}"')
    passwords = {"WRITER": "w-" + secrets.token_hex(12), "READER": "r-" + secrets.token_hex(12)}
    env = _init_env(postgres, database, "logged_writer", "logged_reader")
    for role, password in passwords.items():
        del env[f"LPSTUDY_{role}_PASSWORD"]
        (tmp_path / role).write_text(password + "\n")
        env[f"LPSTUDY_{role}_PASSWORD_FILE"] = str(tmp_path / role)
    env["PGOPTIONS"] = "-c log_statement=all"
    log = postgres.root / "server.log"
    before = log.stat().st_size
    trace = tmp_path / "execve.trace"
    out = subprocess.run([strace, "-f", "-qq", "-e", "trace=execve", "-s", "65536", "-o", str(trace),
                          "bash", str(INIT_SCRIPT)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    commands = trace.read_text()
    assert "psql" in commands and "perl" in commands  # the trace saw the script's processes
    with open(log, "rb") as f:
        f.seek(before)
        logged = f.read().decode(errors="replace")
    assert "ALTER ROLE" in logged and "SCRAM-SHA-256$4096:" in logged  # the statements were logged
    for password in passwords.values():
        assert password not in commands, "a password on a command line"
        assert password not in logged, "a password in the server's log"
        assert password not in out.stdout + out.stderr
    # And the roles log in with them.
    for role, password in passwords.items():
        verifier = stored_verifier(postgres, f"logged_{role.lower()}")
        assert verifier.startswith("SCRAM-SHA-256$"), verifier


def test_the_script_refuses_a_missing_or_unusable_password_with_one_line(postgres):
    from tests.test_deploy import INIT_SCRIPT, _init_env

    env = _init_env(postgres, "roles_db", "rw_writer", "ro_reader")
    for change, said in (({"LPSTUDY_READER_PASSWORD": ""}, "set LPSTUDY_READER_PASSWORD"),
                         ({"LPSTUDY_WRITER_PASSWORD": "two words"}, "printable ASCII without spaces"),
                         ({"LPSTUDY_WRITER_PASSWORD_FILE": "/nonexistent/pw"}, "cannot be read")):
        out = subprocess.run(["bash", str(INIT_SCRIPT)], capture_output=True, text=True, timeout=60,
                             env={**env, **change})
        assert out.returncode == 1 and said in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
