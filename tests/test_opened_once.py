"""A storage URL becomes a storage once per process: `status`, `export` and `report` parse the URL
once and make one engine; `lpstudy dashboard` one engine before its server starts, and the server
one for all its pages and sessions; a worker one Optuna storage, closed when it stops. Counted, as a
reviewer would count them, on the URL's check (lpstudy.db.urls.check_user_info, the first step of
telling a URL's kind), SQLAlchemy's create_engine and the storages' opening of Optuna's."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.study_helpers import TINY, cli

APP = Path(__file__).resolve().parents[1] / "app"


@pytest.fixture
def counted(monkeypatch):
    """Counts of URL checks, engines made, Optuna storages opened and storages closed."""
    import lpstudy.db.kinds as kinds
    from lpstudy.db.kinds.sql import SqlStorage
    from lpstudy.db.optuna_storage import StudyStorage

    counts: collections.Counter = collections.Counter()

    def counting(name, real):
        def call(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(kinds, "check_user_info", counting("url parsed", kinds.check_user_info))
    monkeypatch.setattr(sa, "create_engine", counting("engine", sa.create_engine))
    monkeypatch.setattr(SqlStorage, "_open_optuna", counting("optuna storage", SqlStorage._open_optuna))
    monkeypatch.setattr(StudyStorage, "close", counting("closed", StudyStorage.close))
    return counts


@pytest.mark.parametrize("command", [["status"], ["export"], ["report", "-o", "{tmp}/r.html"]])
def test_a_reading_command_parses_the_url_once_and_makes_one_engine(seeded, counted, capsys, tmp_path, command):
    url, _ = seeded
    counted.clear()
    code, _, err = cli(capsys, *[c.format(tmp=tmp_path) for c in command], "--study", "search", "--storage", url)
    assert code == 0, err
    assert (counted["url parsed"], counted["engine"], counted["optuna storage"]) == (1, 1, 0), counted


def test_the_dashboard_command_makes_one_engine_before_its_server(seeded, counted, capsys, monkeypatch):
    """The URL checked, the database reached and the --study looked up through one reader; then the
    server replaces the process (os.execvpe, caught here)."""
    import os

    url, _ = seeded
    started = []
    monkeypatch.setattr(os, "execvpe", lambda *args: started.append(args))
    counted.clear()
    code, _, err = cli(capsys, "dashboard", "--storage", url, "--study", "search", "--headless", "--port", "18765")
    assert code in (0, None) and len(started) == 1, err
    assert (counted["url parsed"], counted["engine"]) == (1, 1), counted


def test_the_dashboards_pages_get_the_servers_one_reader(seeded, counted, monkeypatch):
    """Four pages, two visits each: the storage's arguments read once, one engine, for all of them."""
    from streamlit.testing.v1 import AppTest

    import common

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    monkeypatch.setattr(common, "_SERVER_READERS", {})
    monkeypatch.setattr(common, "_BY_URL", {})
    parsed = []
    monkeypatch.setattr(common, "_storage_url_of", lambda argv, real=common._storage_url_of: parsed.append(1) or real(argv))
    counted.clear()
    for _ in range(2):
        at = AppTest.from_file(str(APP / "dashboard.py"), default_timeout=60)
        at.session_state[common.STUDY_KEY] = "search"
        at.run()
        for page in ("views/trials.py", "views/export.py", "views/compare.py"):
            at.switch_page(page).run()
            assert not at.exception, [e.value for e in at.exception]
    assert len(parsed) == 1 and counted["url parsed"] == 1 and counted["engine"] == 1, (parsed, counted)


@pytest.mark.slow  # it trains a trial
def test_a_worker_opens_one_optuna_storage_and_closes_it(sqlite_url, counted, capsys):
    code, _, err = cli(capsys, "create", "--study", "w", "--storage", sqlite_url, "--preset", "smoke",
                       "--sampler", "random", "--pruner", "none", *TINY)
    assert code == 0, err
    counted.clear()
    code, _, err = cli(capsys, "worker", "--study", "w", "--storage", sqlite_url, "--n-trials", "1",
                       "--devices", "cpu", "--no-progress")
    assert code == 0, err
    assert counted["url parsed"] == counted["optuna storage"] == 1 and counted["closed"] >= 1, counted


def test_one_object_holds_the_urls_optuna_storage_and_engine_and_reads_through_them(seeded, counted, monkeypatch):
    """The storage at a URL is one object: made once, it opens Optuna's storage once and shares its
    engine with the metrics table and with its reads (a command that writes and reads, as a
    sequential worker's stage check, makes no second engine); close() lets go of the engine. A reader
    made from the URL reads studies, frames, curves and fingerprints on one read-only engine and never
    opens Optuna's storage."""
    from lpstudy.db.kinds import open_reader
    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.results.reading.frames import load_study, study_fingerprint, study_infos

    url, _ = seeded
    disposed = []
    monkeypatch.setattr(sa.engine.Engine, "dispose", lambda self, real=sa.engine.Engine.dispose, **k:
                        disposed.append(self) or real(self, **k))
    counted.clear()
    storage = open_storage(url, readonly=True)  # Optuna's storage opened now, as the Optuna dashboard's
    made = counted["engine"]  # Optuna's, and the schema check's own of one connection
    optuna_storage = storage.optuna
    assert storage.engine is optuna_storage.engine
    assert {"search", "grid"} <= {info.name for info in study_infos(storage)}
    assert len(load_study(storage, "search").trials) > 0 and study_fingerprint(storage, "search") is not None
    assert storage.optuna is optuna_storage  # kept through the reads
    assert counted["engine"] == made and counted["optuna storage"] == 1  # the reads used Optuna's engine
    engine = storage.engine
    storage.close()
    assert engine in disposed

    counted.clear()
    with open_reader(url) as reader:
        assert {"search", "grid"} <= {info.name for info in study_infos(reader)}
        data = load_study(reader, "search")
        assert len(data.trials) > 0 and len(data.curves) > 0 and study_fingerprint(reader, "search") is not None
        engine = reader.engine
    assert (counted["url parsed"], counted["engine"], counted["optuna storage"]) == (1, 1, 0), counted
    assert engine in disposed


@pytest.mark.slow  # it trains a trial
def test_a_comparisons_worker_opens_one_optuna_storage_for_every_arm(sqlite_url, counted, capsys):
    """A comparison's worker takes its arms' trials and checks its stages on the storage it opened to
    find the study: it opened a second one before (and never closed the first)."""
    code, _, err = cli(capsys, "compare", "--study", "cmp", "--p", "1,2", "--tune", "lr", "--budget", "1",
                       "--folds", "2", "--preset", "smoke", "--storage", sqlite_url, *TINY)
    assert code == 0, err
    counted.clear()
    code, _, err = cli(capsys, "worker", "--study", "cmp", "--storage", sqlite_url, "--n-trials", "1",
                       "--devices", "cpu", "--no-progress")
    assert code == 0, err
    assert "cmp:p=1:tune: trial 0 COMPLETE" in err or "cmp:p=2:tune: trial 0 COMPLETE" in err, err
    assert counted["url parsed"] == counted["optuna storage"] == 1 and counted["closed"] >= 1, counted


@pytest.fixture
def made(monkeypatch):
    """Every storage object made (lpstudy.db.kinds.base.StudyStorage), in order."""
    from lpstudy.db.kinds.base import StudyStorage

    objects: list = []
    real = StudyStorage.__init__

    def init(self, *args, **kwargs):
        objects.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(StudyStorage, "__init__", init)
    return objects


@pytest.mark.parametrize("command", [
    ["create", "--sampler", "random", "--pruner", "none", "--preset", "smoke"],
    ["replicate", "--preset", "smoke", "--p", "1,2", "--folds", "2"],
    ["replicate", "--preset", "smoke", "--p", "1,2", "--max-folds", "3", "--until-decided"],
    ["compare", "--p", "1,2", "--tune", "lr", "--budget", "1", "--folds", "2", "--preset", "smoke"],
])
def test_a_creating_command_makes_one_storage_from_its_check_to_its_close(sqlite_url, made, capsys, command):
    """The storage preflight checks is the one the command creates the study on, reads its state
    through and closes: before, replicate made a second one it never closed, compare three."""
    code, _, err = cli(capsys, *command, "--study", "s", "--storage", sqlite_url, *TINY)
    assert code == 0, err
    assert len(made) == 1 and made[0].closed, made


def test_a_command_reads_a_study_and_its_curves_through_its_writing_storage(tmp_path):
    """A creating command reads its study's status on the storage it wrote with: on SQLite every
    transaction of that storage takes the write lock (BEGIN IMMEDIATE), so the study's rows and its
    curves are read on one connection; a second one for the curves waited on the first (then
    'database is locked')."""
    import math

    import optuna

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.results.reading.frames import load_study
    from lpstudy.training.metrics import MetricRecord

    with open_storage(f"sqlite:///{tmp_path / 'w.db'}", create_tables=True) as storage:
        study = optuna.create_study(study_name="w", storage=storage.optuna)
        trial = study.ask()
        storage.prepare_curves()
        nan = math.nan
        storage.write_evaluation("w", trial._trial_id, trial.number,
                                 MetricRecord(10, 2.5, 2.25, 1e-3, 1.0, 1.0, nan, nan, nan, 1.0, 100.0, 1.0))
        study.tell(trial, 2.25)
        curves = load_study(storage, "w").curves
    assert list(curves["step"]) == [10] and list(curves["val_loss"]) == [2.25]
