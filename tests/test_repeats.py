"""Repeated cross-validation (`replicate --repeats R`, `compare --repeats R`): the K folds run R times,
each repeat over a new partition of the text and with new training seeds; every (p, repeat, fold) is one
cell, run once; the trials carry `repeat` (0 for a trial made before repeats)."""

from __future__ import annotations

import json

import pytest

from lpstudy.errors import UserError
from lpstudy.design.spec import replicate_spec
from lpstudy.training.config import resolve_config
from lpstudy.training.data import fold_split
from tests.study_helpers import TINY, lp_env, lpstudy, trials_of

N = 1_115_394  # Tiny Shakespeare's characters


@pytest.mark.parametrize("folds", [2, 5, 10])
@pytest.mark.parametrize("repeat", [1, 2, 7])
def test_a_repeat_cuts_the_text_elsewhere_and_its_folds_still_partition_it(folds, repeat):
    plain = [fold_split(N, f, folds).validation for f in range(folds)]
    again = [fold_split(N, f, folds, repeat).validation for f in range(folds)]
    assert again != plain  # a new partition
    assert fold_split(N, 0, folds, repeat) == fold_split(N, 0, folds, repeat)  # the same on every call
    positions = 0
    for f in range(folds):
        split = fold_split(N, f, folds, repeat)
        parts = sorted([*split.validation, *split.training])
        assert all(0 <= a < b <= N for a, b in parts)  # no segment runs across the text's end
        # validation and training cover the text once, without overlap
        assert sum(b - a for a, b in parts) == N
        assert all(parts[i][1] <= parts[i + 1][0] for i in range(len(parts) - 1))
        positions += sum(b - a for a, b in split.validation)
    assert positions == N  # the K validation folds of one repeat cover every position once


def test_repeat_0_is_the_plain_cross_validation_every_older_trial_ran():
    split = fold_split(N, 3, 10)
    assert split.validation == ((3 * N // 10, 4 * N // 10),)
    assert resolve_config("smoke", {"seed": 5}).run_seed == 5
    seeds = {resolve_config("smoke", {"seed": 5, "repeat": r}).run_seed for r in range(4)}
    assert len(seeds) == 4  # every repeat trains with its own seed


def test_a_repeated_replicate_has_a_cell_per_p_repeat_and_fold_and_a_plain_one_keeps_its_spec():
    spec = replicate_spec("smoke", [1, 2], 3, options={"repeats": 2})
    cells = [(float(c["p"]), int(c["repeat"]), int(c["fold"])) for c in spec.space.grid_cells()]
    assert len(cells) == len(set(cells)) == 2 * 2 * 3 == spec.n_cells
    plain = replicate_spec("smoke", [1, 2], 3)
    assert "repeats" not in plain.to_plain() and "repeat" not in plain.space.to_plain()  # its SHA-256 unchanged
    assert spec.to_plain()["repeats"] == 2
    with pytest.raises(UserError, match="repeats"):
        replicate_spec("smoke", [1, 2], 3, options={"repeats": 0})
    with pytest.raises(UserError, match="--until-decided"):
        replicate_spec("smoke", [1, 2], 3, options={"repeats": 2},
                       until_decided={"rounds": [3], "reference": 2.0, "rope": 0.01, "alpha": 0.05})


def test_the_trainer_trains_and_validates_on_the_repeats_partition(monkeypatch):
    """The run of repeat 1 asks for repeat 1's split (the trainer's one call), which differs from repeat 0's."""
    import lpstudy.training.trainer as trainer
    from lpstudy.training.data import Corpus, load_corpus

    seen = []

    def spy(n, fold, folds, repeat=0):
        split = fold_split(n, fold, folds, repeat)
        seen.append(split)
        return split

    monkeypatch.setattr(trainer, "fold_split", spy)
    corpus = load_corpus()
    small = Corpus(chars=corpus.chars, tokens=corpus.tokens[:20_000], source=corpus.source)
    for repeat in (0, 1):
        cfg = resolve_config("smoke", {"max_steps": 2, "eval_interval": 2, "eval_iters": 1, "folds": 2,
                                       "repeat": repeat, "device": "cpu"})
        trainer.train(cfg, small)
    assert [s.repeat for s in seen] == [0, 1]
    assert seen[0].validation != seen[1].validation


@pytest.mark.slow
def test_a_replicate_with_two_repeats_runs_each_p_repeat_and_fold_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    done = lpstudy("replicate", "--study", "r", "--storage", url, "--preset", "smoke", "--p", "1,2",
                   "--folds", "2", "--repeats", "2", *TINY, "--workers", "1", "--devices", "cpu", "--no-progress",
                   env=lp_env(), timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 repeats × 2 folds" in done.stdout + done.stderr
    runs = [(float(t.user_attrs["p"]), int(t.user_attrs["repeat"]), int(t.user_attrs["fold"]))
            for t in trials_of(url, "r") if t.state.name == "COMPLETE"]
    assert sorted(runs) == sorted({(p, r, f) for p in (1.0, 2.0) for r in (0, 1) for f in (0, 1)})
    status = json.loads(lpstudy("status", "--study", "r", "--storage", url, "--json").stdout)
    assert status["grid"]["done"] == status["grid"]["n_cells"] == 8 and status["duplicates"] == []

    from lpstudy.db.kinds import open_reader
    from lpstudy.results.reading.frames import load_study

    trials = load_study(open_reader(url), "r").trials
    assert sorted(trials["repeat"].unique()) == [0, 1]
    # run again: nothing is enqueued twice
    again = lpstudy("replicate", "--study", "r", "--storage", url, "--preset", "smoke", "--p", "1,2",
                    "--folds", "2", "--repeats", "2", *TINY, env=lp_env(), cwd=tmp_path)
    assert again.returncode == 0 and "(0 enqueued now)" in again.stdout + again.stderr, again.stdout + again.stderr


def test_old_trials_read_as_repeat_0():
    import pandas as pd

    from lpstudy.results.rows.build import TRIAL_COLUMNS, finish_trials_frame

    raw = pd.DataFrame([{"number": 0, "trial_id": 1, "state": "COMPLETE", "value": 2.0, "p": 2.0, "fold": 0}])
    frame = finish_trials_frame(raw, None)
    assert "repeat" in TRIAL_COLUMNS and frame["repeat"].tolist() == [0.0]



def test_a_comparison_repeats_each_arms_folds_and_its_plan_says_so():
    from lpstudy.study.compare import ComparePlan, make_plan

    plan = make_plan("p", ["1", "2"], ["lr"], budget=2, folds=3, preset="smoke", repeats=2)
    spec = plan.folds_spec(1.0, {"lr": 1e-3})
    cells = {(int(c["repeat"]), int(c["fold"])) for c in spec.space.grid_cells()}
    assert cells == {(r, f) for r in (0, 1) for f in range(3)}
    assert ComparePlan.from_plain(plan.to_plain()).repeats == 2
    assert "repeats" not in make_plan("p", ["1", "2"], ["lr"], budget=2, folds=3, preset="smoke").to_plain()
    with pytest.raises(UserError, match="--until-decided"):
        make_plan("p", ["1", "2"], ["lr"], budget=2, folds=3, preset="smoke", repeats=2,
                  until_decided={"rounds": [3], "rope": 0.01, "alpha": 0.05})
