"""The read side: studies, trials and curves come out of SQLite, PostgreSQL and journal storages
the same way, read-only, and a database that cannot be read says so in one line."""

from __future__ import annotations

import hashlib
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from lpstudy.db.kinds import storage_at
from lpstudy.results.reading import frames as results
from lpstudy.values import STATES
from lpstudy.errors import UserError
from lpstudy.training.metrics import METRIC_FIELDS
from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.db.kinds import open_reader

SMALL = {"n_trials": 12, "n_evals": 6, "seed": 3, "now": datetime(2026, 1, 1, 12, 0, 0)}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# The `seeded` fixture (tests/conftest.py): a search of 40 trials and a replicate grid of 7 p × 4 folds.
SEEDED_TRIALS, SEEDED_FOLDS = 40, 4


def test_studies_are_listed_with_their_kind(seeded):
    url, _ = seeded
    assert [info.name for info in results.study_infos(open_reader(url))] == ["grid", "search"]
    kinds = {info.name: info.kind for info in results.study_infos(open_reader(url))}
    assert kinds == {"grid": "replicate", "search": "search"}


def test_trials_frame_holds_what_the_study_service_wrote(seeded):
    url, _ = seeded
    trials = results.load_trials(open_reader(url), "search")
    assert list(trials.columns[: len(results.TRIAL_COLUMNS)]) == list(results.TRIAL_COLUMNS)
    assert len(trials) == SEEDED_TRIALS and list(trials["number"]) == list(range(SEEDED_TRIALS))
    assert set(trials["state"]) == set(STATES)
    done = trials[trials["state"] == "COMPLETE"]
    assert done["value"].notna().all()
    diverged = done[done["diverged"]]
    assert len(diverged) and list(diverged["value"]) == pytest.approx([math.log(65)] * len(diverged))
    assert np.isinf(trials["p"]).any()  # p = ∞ from the p_inf switch and the user attribute
    waiting = trials[trials["state"] == "WAITING"].iloc[0]
    assert not math.isnan(waiting["lr"])  # an enqueued trial's parameters come from fixed_params
    running = trials[trials["state"] == "RUNNING"]
    assert (running["last_step"] > 0).all() and running["worker"].notna().all()


def test_grid_trials_carry_p_and_fold(seeded):
    url, _ = seeded
    trials = results.load_trials(open_reader(url), "grid")
    assert set(trials["fold"].dropna()) == set(map(float, range(SEEDED_FOLDS)))
    assert set(trials["p"]) == {1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0}


def test_reading_optunas_tables_directly_gives_what_optunas_api_gives(seeded):
    url, _ = seeded
    for name in ("search", "grid"):
        direct, via_optuna = results.load_study(open_reader(url), name), results.load_study(open_reader(url), name, via_optuna=True)
        pd.testing.assert_frame_equal(direct.trials, via_optuna.trials)
        pd.testing.assert_frame_equal(direct.curves, via_optuna.curves)
        assert direct.info == via_optuna.info


def test_curves_come_from_the_metrics_table_or_trial_attributes_alike(tmp_path):
    table_url, attrs_url = f"sqlite:///{tmp_path / 'table.db'}", f"sqlite:///{tmp_path / 'attrs.db'}"
    write_synthetic_study(table_url, "s", metrics="table", **SMALL)
    write_synthetic_study(attrs_url, "s", metrics="attrs", **SMALL)
    from_table, from_attrs = results.load_study(open_reader(table_url), "s").curves, results.load_study(open_reader(attrs_url), "s").curves
    assert list(from_table.columns) == list(results.CURVE_COLUMNS)
    assert len(from_table) > SMALL["n_trials"] and from_table["train_loss"].notna().all()
    pd.testing.assert_frame_equal(from_table, from_attrs)


def test_a_journal_study_reads_like_a_sql_one(tmp_path):
    sql_url, journal_url = f"sqlite:///{tmp_path / 's.db'}", f"journal:///{tmp_path / 's.log'}"
    write_synthetic_study(sql_url, "s", **SMALL)
    write_synthetic_study(journal_url, "s", metrics="attrs", **SMALL)
    sql, journal = results.load_study(open_reader(sql_url), "s"), results.load_study(open_reader(journal_url), "s")
    ignore = ["trial_id", "datetime_start", "datetime_complete", "duration_s"]
    pd.testing.assert_frame_equal(sql.trials.drop(columns=ignore), journal.trials.drop(columns=ignore))
    pd.testing.assert_frame_equal(sql.curves.drop(columns="trial_id"), journal.curves.drop(columns="trial_id"))


def test_reading_never_writes(seeded):
    url, path = seeded
    before = digest(path), path.stat().st_mtime_ns
    results.load_study(open_reader(url), "search")
    results.load_study(open_reader(url), "grid", via_optuna=True)
    results.study_infos(open_reader(url))
    assert (digest(path), path.stat().st_mtime_ns) == before
    engine = storage_at(url).make_engine(readonly=True, check=True)
    with pytest.raises(sa.exc.OperationalError, match="readonly"):
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM trials"))
    engine.dispose()
    assert digest(path) == before[0]


def test_a_database_that_cannot_be_read_says_so_in_one_line(tmp_path, seeded):
    url, _ = seeded
    with pytest.raises(UserError, match="no study database at"):
        results.load_study(open_reader(f"sqlite:///{tmp_path / 'missing.db'}"), "s")
    assert not (tmp_path / "missing.db").exists()  # mode=ro never creates a file
    with pytest.raises(UserError, match=r"no study named 'nope'.*grid, search"):
        results.load_trials(open_reader(url), "nope")
    with pytest.raises(UserError) as caught:
        results.study_infos(open_reader("postgresql+psycopg://reader:s3cret@127.0.0.1:1/lpstudy"))
    message = str(caught.value)
    assert "s3cret" not in message and "reader:***@127.0.0.1:1" in message and "\n" not in message
    assert "cannot read the study database" in message and "Connection refused" in message
    empty = tmp_path / "empty.db"
    empty.touch()
    assert results.study_infos(open_reader(f"sqlite:///{empty}")) == []


@pytest.mark.postgres
def test_postgresql_reads_read_only_and_like_sqlite(pg_url, tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "search", **SMALL)
    write_synthetic_study(pg_url, "search", **SMALL)
    pg, lite = results.load_study(open_reader(pg_url), "search"), results.load_study(open_reader(url), "search")
    ignore = ["trial_id", "datetime_start", "datetime_complete", "duration_s"]
    pd.testing.assert_frame_equal(pg.trials.drop(columns=ignore), lite.trials.drop(columns=ignore))
    floats = [c for c in METRIC_FIELDS if c != "step"]
    pd.testing.assert_frame_equal(pg.curves[floats], lite.curves[floats])
    engine = storage_at(pg_url).make_engine(readonly=True, check=True)
    with pytest.raises(sa.exc.InternalError, match="read-only transaction"):
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM trials"))
    engine.dispose()
    assert len(results.load_trials(open_reader(pg_url), "search")) == SMALL["n_trials"]


def test_the_fingerprint_changes_exactly_when_the_study_does(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'live.db'}"
    write_synthetic_study(url, "live", **SMALL)
    first = results.study_fingerprint(open_reader(url), "live")
    assert first == results.study_fingerprint(open_reader(url), "live")
    study = optuna.load_study(study_name="live", storage=url)
    trial = study.ask()
    changed = results.study_fingerprint(open_reader(url), "live")
    assert changed != first  # a new RUNNING trial
    trial.report(3.0, 25)
    assert results.study_fingerprint(open_reader(url), "live") != changed  # an evaluation
    assert results.study_fingerprint(open_reader(f"journal:///{tmp_path / 'x.log'}"), "live") is None
    with pytest.raises(UserError, match="no study named"):
        results.study_fingerprint(open_reader(url), "nope")
