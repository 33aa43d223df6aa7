"""Shared fixtures: the corpus from ../shared/data, a throwaway PostgreSQL server, fresh databases."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))  # the dashboard's shared module (app/common.py), as Streamlit sees it
SHARED_CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"

# Tests never download: the corpus comes from LPSTUDY_DATA, else ../shared/data. Resolved once, here,
# to an absolute path against the folder pytest starts in (the README's command gives it relative to
# the repository root): the tests and every process they start, from whatever folder, read that file.
os.environ["LPSTUDY_DATA"] = str(Path(os.environ.get("LPSTUDY_DATA") or SHARED_CORPUS).expanduser().resolve())
torch.set_num_threads(1)
# ... and said so, as a user's OMP_NUM_THREADS=1 says it: runs made in this process (the in-process
# command line) record one thread, as the processes the tests start do (study_helpers.lp_env).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(items):
    """The fast tier (`pytest -m "not slow" -n 2`) runs mostly in pytest's own processes: a test that needs
    the throwaway PostgreSQL server (its marker `postgres`, or the `postgres` or `pg_url` fixture)
    or the studies real worker processes write (`real_study`, `real_grids`) is part of the slow
    tier, as are those marked `slow` by hand (they start workers, servers or a browser, wait out
    timeouts, or sweep every case where one case stands for them in the fast tier)."""
    slow_fixtures = {"postgres", "pg_url", "real_study", "real_grids"}
    for item in items:
        if item.get_closest_marker("postgres") or slow_fixtures & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)


LEAKABLE_ENV = ("LPSTUDY_STORAGE", "LPSTUDY_STORAGE_FILE", "LPSTUDY_DASHBOARD_STUDY", "LPSTUDY_ARTIFACTS")


@pytest.fixture(autouse=True)
def _no_environment_leaks(request):
    """A test that sets the storage's environment (the dashboard's tests do) and leaves it set makes
    every later test in this process read another database: fail it, and put the value back."""
    before = {name: os.environ.get(name) for name in LEAKABLE_ENV}
    yield
    leaked = {name: os.environ.get(name) for name in LEAKABLE_ENV if os.environ.get(name) != before[name]}
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if leaked:
        pytest.fail(f"{request.node.nodeid} left {', '.join(sorted(leaked))} changed in os.environ; "
                    "use monkeypatch.setenv", pytrace=False)


@pytest.fixture(scope="session")
def corpus_path() -> Path:
    path = Path(os.environ["LPSTUDY_DATA"])
    if not path.is_file():
        pytest.fail(f"the test corpus {path} is missing; set LPSTUDY_DATA to Tiny Shakespeare's input.txt")
    return path


@pytest.fixture(scope="session")
def corpus(corpus_path):
    from lpstudy.training.data import load_corpus

    return load_corpus(corpus_path)


@pytest.fixture(scope="session")
def postgres():
    """One throwaway server for the session. It fails (never skips) when it cannot start, so that
    CI cannot pass without having run the PostgreSQL tests."""
    from tests.pgserver import ThrowawayPostgres

    server = ThrowawayPostgres().start()
    yield server
    server.cleanup()


_db_counter = itertools.count()


@pytest.fixture
def pg_url(postgres) -> str:
    """A fresh, empty database on the throwaway server; its URL."""
    return postgres.create_database(f"t{os.getpid()}_{next(_db_counter)}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request, tmp_path) -> str:
    """An empty database of each SQL kind: a SQLite file not yet made, a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'study.db'}"


@pytest.fixture(scope="session")
def seeded(tmp_path_factory) -> tuple[str, Path]:
    """(URL, file) of a SQLite database holding a synthetic search study (40 trials, every state, some
    diverged, p = ∞) and a replicate grid, smoke preset (6 evaluations of 25 steps: the smoke preset's
    150 steps, so an export retrains quickly), written once per session. Tests only read it."""
    from lpstudy.study.synthetic import write_synthetic_study
    from tests.study_helpers import SEEDED_AT

    path = tmp_path_factory.mktemp("seeded") / "study.db"
    url = f"sqlite:///{path}"
    write_synthetic_study(url, "search", n_trials=40, n_evals=6, seed=1, now=SEEDED_AT)
    write_synthetic_study(url, "grid", kind="replicate", folds=4, n_evals=6, seed=1, now=SEEDED_AT)
    return url, path


@pytest.fixture(scope="session")
def real_study(tmp_path_factory, corpus_path):
    """A search and a grid written by real `lpstudy` workers, once per test run, however many xdist
    workers read it (tests/real_study.py, tests/once_per_run.py). Tests only read it."""
    from tests.once_per_run import once_per_run
    from tests.real_study import write_real_study

    return once_per_run(tmp_path_factory, "real-study", write_real_study)


@pytest.fixture(scope="session")
def real_grids(tmp_path_factory, corpus_path) -> str:
    """The URL of three grid studies ("g", "g-lr", "g-k5") run by real workers, once per test run
    (tests/real_study.py write_real_grids). Tests only read it: their files go to their tmp_path."""
    from tests.once_per_run import once_per_run
    from tests.real_study import write_real_grids

    return once_per_run(tmp_path_factory, "real-grids", write_real_grids)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist (the slow tier's `-n 3`), a test marked `alone` has the machine to itself:
    it loads every core far past the rest by design (two hundred worker processes), and tests that
    wait on time beside it (a checkpoint within two minutes, a scrape, a page) starved and failed
    on CI. Every other test holds the machine shared; an `alone` test waits for the running ones to
    end and holds it alone, and no new test starts while it waits (a turnstile, so that the other
    workers' stream of tests cannot keep it waiting). Taken outside pytest-timeout's timer (this
    wrapper runs first), so that waiting for the machine is not counted as the test's own time."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None:  # one process: nothing runs beside the test
        yield
        return
    import fcntl
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"lpstudy-tests-{workerinput['testrunuid']}"  # one per run, all workers
    folder.mkdir(exist_ok=True)
    alone = item.get_closest_marker("alone") is not None
    with open(folder / "turnstile", "a") as turnstile, open(folder / "machine", "a") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)
