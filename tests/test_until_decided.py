"""`lpstudy replicate --until-decided` and `lpstudy verdict` as a user runs them: the rounds, each
cell once with two workers, an arm that stops before --max-folds, and the one-line refusals."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from lpstudy.design.spec import replicate_spec
from lpstudy.study.studies import spec_sha256
from tests.study_helpers import cli, lp_env, lpstudy, trials_of


def test_a_replicate_without_until_decided_keeps_its_spec_and_so_its_identity():
    """Studies made before --until-decided existed are the same studies: the key is only written when set."""
    plain = replicate_spec("smoke", ["1", "2"], 3).to_plain()
    assert "until_decided" not in plain
    sequential = replicate_spec("smoke", ["1", "2"], 6, until_decided={"rounds": [3, 5, 6]})
    assert sequential.to_plain()["until_decided"] == {"rounds": [3, 5, 6], "reference": 2.0}
    assert spec_sha256(sequential.to_plain()) != spec_sha256(replicate_spec("smoke", ["1", "2"], 6).to_plain())
    assert [c["fold"] for c in sequential.first_round_cells()] == [0, 1, 2, 0, 1, 2]


def test_until_decided_refuses_what_it_cannot_run_in_one_line(sqlite_url, capsys):
    code, _, err = cli(capsys, "replicate", "--study", "s", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--max-folds", "6")
    assert code == 2 and err.strip() == ("lpstudy: error: --max-folds goes with --until-decided "
                                         "(without it, --folds sets K)")
    code, _, err = cli(capsys, "replicate", "--study", "s", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,3", "--until-decided", "--max-folds", "6")
    assert code == 2 and err.strip() == ("lpstudy: error: --until-decided compares every p with the reference "
                                         "p = 2: add it to --p")


def test_until_decided_on_three_folds_says_it_saves_nothing(sqlite_url, capsys):
    """K = 3 leaves one stage (3 folds): the command says no fold run can be saved and what would."""
    code, _, err = cli(capsys, "replicate", "--study", "s", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--folds", "3", "--until-decided", "--workers", "0")
    assert code == 0, err
    assert "with 3 folds --until-decided has one stage" in err and "--max-folds 10" in err, err
    code, _, err = cli(capsys, "replicate", "--study", "t", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--until-decided", "--max-folds", "6", "--workers", "0")
    assert code == 0 and "one stage" not in err, err


def test_verdict_on_a_search_study_says_what_verdicts_are_for(sqlite_url, capsys):
    from lpstudy.study.synthetic import write_synthetic_study

    write_synthetic_study(sqlite_url, "search", n_trials=6, n_evals=3, seed=1)
    code, _, err = cli(capsys, "verdict", "--study", "search", "--storage", sqlite_url)
    try:
        import lpstudy.results.answers.search  # noqa: F401
    except ImportError:  # the search branch of the answers is not there: a clear line, exit 2
        assert code == 2 and err.strip() == ("lpstudy: error: 'search' is a search study: verdicts are for "
                                             "replicate, grid and compare studies (lpstudy replicate, lpstudy compare)")
    else:
        assert code == 0, err


@pytest.mark.slow
def test_until_decided_stops_an_arm_before_max_folds_and_runs_every_cell_once(tmp_path, corpus_path):
    """The smoke preset with the matched gain, K = 6 (rounds 3, 5, 6), two local workers: with a ROPE
    of ±5 % the arms are equivalent to p = 2 after 5 folds (their differences are about 1 %)."""
    url = f"sqlite:///{tmp_path / 'seq.db'}"
    done = lpstudy("replicate", "--study", "seq", "--storage", url, "--preset", "smoke", "--p", "1,2,4",
                   "--gain-init", "matched", "--until-decided", "--max-folds", "6", "--rope", "0.05",
                   "--workers", "2", "--no-progress", "--data", str(corpus_path), env=lp_env(), timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    cells = Counter((float(t.params["p"]), int(t.params["fold"])) for t in trials_of(url, "seq"))
    assert set(cells.values()) == {1}, cells  # every cell once
    folds = Counter(p for p, _ in cells)
    assert folds[2.0] == max(folds.values()) and min(folds.values()) < 6, folds  # an arm stopped before K
    answer = json.loads(lpstudy("verdict", "--study", "seq", "--storage", url, "--json").stdout)
    seq = answer["sequential"]
    assert seq["over"] and seq["folds_saved"] == 3 * 6 - sum(folds.values()) > 0
    stopped = {float(p): n for p, n in seq["stopped"].items()}
    assert stopped and all(n < 6 for n in stopped.values())
    assert {arm["verdict"] for arm in answer["arms"] if arm["p"] in stopped} <= {"equivalent", "better", "worse"}
    assert "fold runs saved against --max-folds 6" in done.stdout + done.stderr
