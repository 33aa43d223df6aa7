"""Every check that can refuse a command runs before its first write: each command below is refused
in one line with exit status 2, no traceback, and the database is found unchanged afterwards (every
row of every table, a new study's name included); one rule per kind of value (a margin above 0, a
loss threshold in the study option's bounds, K said once, a range of trials counted before it is
spelled out)."""

from __future__ import annotations

import sqlite3
import time

import pytest

from tests.study_helpers import cli

SEEDED = "kept"  # the study already in the database: a refusal leaves it as it was

REFUSED = {
    "search on a GPU this machine lacks": (
        ["search", "--study", "new", "--devices", "cuda:99", "--n-trials", "1"], "--devices asks for cuda:99"),
    "worker on a GPU this machine lacks": (["worker", "--study", SEEDED, "--devices", "cuda:99"], "--devices asks for cuda:99"),
    "search racing on more folds than K": (
        ["search", "--study", "new", "--folds", "3", "--race-folds", "9", "--n-trials", "1", "--devices", "cpu"],
        "--race-folds 9 is more than the study's 3 folds"),
    "create racing on more folds than K": (
        ["create", "--study", "new", "--folds", "3", "--race-folds", "9"], "--race-folds 9 is more than the study's 3 folds"),
    "replicate with --max-folds below --folds": (
        ["replicate", "--study", "new", "--preset", "smoke", "--p", "1,2", "--folds", "5", "--until-decided",
         "--max-folds", "4"], "--max-folds 4 is below --folds 5"),
    "compare with --max-folds below --folds": (
        ["compare", "--study", "new", "--preset", "smoke", "--p", "1,2", "--folds", "6", "--until-decided",
         "--max-folds", "4"], "--max-folds 4 is below --folds 6"),
    "replicate with a ROPE of 0": (
        ["replicate", "--study", "new", "--preset", "smoke", "--p", "1,2", "--folds", "3", "--rope", "0"],
        "--rope 0 must be above 0"),
    "search on a corpus that is not there": (
        ["search", "--study", "new", "--n-trials", "1", "--devices", "cpu", "--data", "/nonexistent/input.txt"],
        "/nonexistent/input.txt"),
    "verdict with a convergence ROPE of 0": (
        ["verdict", "--study", SEEDED, "--convergence-rope", "0"], "--convergence-rope 0 must be above 0"),
    "verdict with an infinite threshold": (["verdict", "--study", SEEDED, "--threshold", "inf"], "--threshold must be in (0, 1000]"),
    "report with an infinite threshold": (["report", "--study", SEEDED, "--threshold", "inf"], "--threshold must be in (0, 1000]"),
    "verdict naming a reference on a search": (["verdict", "--study", SEEDED, "--reference", "7"], "is a search"),
    "report of a range of 10^11 trials": (
        ["report", "--study", SEEDED, "--trials", "0-99999999999"], "picks 100,000,000,000 trials"),
}


def rows(path) -> list[str]:
    """Every row of every table of the SQLite file, as SQL: what a write would change."""
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


@pytest.fixture(scope="module")
def kept_db(tmp_path_factory):
    from lpstudy.study.synthetic import write_synthetic_study
    from tests.study_helpers import SEEDED_AT

    path = tmp_path_factory.mktemp("refusals") / "study.db"
    write_synthetic_study(f"sqlite:///{path}", SEEDED, n_trials=6, n_evals=3, seed=2, now=SEEDED_AT)
    return path


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_command_says_one_line_and_leaves_the_database_unchanged(case, kept_db, capsys, tmp_path,
                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)  # a report would be written here
    args, words = REFUSED[case]
    before = rows(kept_db)
    started = time.monotonic()
    code, out, err = cli(capsys, *args, "--storage", f"sqlite:///{kept_db}")
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("lpstudy: error: ") and "Traceback" not in err, err
    assert words in err, err
    assert rows(kept_db) == before  # nothing written: no study, no trial, no attribute
    assert not list(tmp_path.iterdir())  # nor a file
    assert time.monotonic() - started < 60  # refused, not run (a range spelled out ran for minutes)
