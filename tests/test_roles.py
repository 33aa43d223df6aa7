"""Least privilege, tried against a real PostgreSQL (tests/pgserver.py) with the roles of
storage/init/10-lpstudy-roles.sh: the read-only role writes nothing, large objects included, even
after it turns its session's read-only default off, and connects to the study database only."""

from __future__ import annotations

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
