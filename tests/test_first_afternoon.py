"""The stumbles of a first afternoon with the service, each as a user meets it: a mistake answered
with one line whose point comes first and that names what was meant; counts and words that agree."""

from __future__ import annotations

import pytest

from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.training.costs import Machine
from tests.study_helpers import cli


@pytest.fixture
def search_db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "lp", n_trials=4, n_evals=2, seed=1, states=False)
    return url


def test_a_postgres_url_gets_the_scheme_lpstudy_reads(capsys):
    code, _, err = cli(capsys, "status", "--study", "lp", "--storage", "postgres://me:Secr3t@db/lp")
    assert code == 2 and err.count("\n") == 1, err
    assert err.rstrip().endswith("; did you mean postgresql+psycopg://me:***@db/lp?"), err
    assert "Secr3t" not in err
    code, _, err = cli(capsys, "status", "--study", "lp", "--storage", "jornal:///x.log")
    assert code == 2 and err.rstrip().endswith("did you mean 'journal'?"), err


def test_a_misspelt_field_gets_the_near_field_names(search_db, capsys):
    code, _, err = cli(capsys, "search", "--study", "new", "--preset", "smoke", "--storage", search_db,
                       "--set", "max_step=4", "--n-trials", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("lpstudy: error: unknown field 'max_step' in the search space; did you mean 'max_steps'"), err


@pytest.mark.parametrize("command", [
    ["replicate", "--p", "1,2", "--folds", "2"],
    ["compare", "--p", "1,2", "--budget", "1", "--folds", "2"],
])
def test_a_study_continued_as_another_kind_is_refused_with_the_point_first(search_db, capsys, command):
    code, _, err = cli(capsys, command[0], "--study", "lp", "--preset", "smoke", "--storage", search_db, *command[1:])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("lpstudy: error: that name is a search: study 'lp' exists as a search, not a "), err
    assert len(err) < 250 and "stored" not in err, err  # not every field of two specs


def test_one_other_thread_is_one_thread():
    assert "(about 1 other thread wants its 2 cores)" in Machine(cores=2, others=1.2).describe(2)
    assert "(about 3 other threads want its 2 cores)" in Machine(cores=2, others=3).describe(2)
