"""`lpstudy compare`: every arm gets the same tuning budget, its best configuration is replicated on
each fold exactly once, rerunning resumes without duplicating, and the verdicts compare the
arms fold by fold against the reference."""

from __future__ import annotations

import math

import pytest

from lpstudy.db.optuna_storage import open_storage
from lpstudy.results.reading.compare import load_compare, stages_answer
from lpstudy.study.studies import load_spec, study_names
from tests.study_helpers import best_by_hand, cli, trials_of
from lpstudy.db.kinds import open_reader

QUICK = ["--set", "max_steps=20", "--set", "eval_interval=10", "--set", "eval_iters=1"]


@pytest.mark.slow
def test_compare_gives_equal_budgets_then_replicates_each_best_once(empty_url, capsys):
    url = empty_url
    args = ["compare", "--study", "cmp", "--storage", url, "--preset", "smoke", "--p", "1,2,4",
            "--budget", "3", "--folds", "2", "--sampler-seed", "5", *QUICK]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "cmp", "--storage", url, "--devices", "cpu",
                       "--no-progress", "--n-trials", "4")  # a worker that stops half way ...
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "cmp", "--storage", url, "--devices", "cpu",
                       "--no-progress")  # ... and one that finishes the comparison
    assert code == 0, err
    for arm in ("p=1", "p=2", "p=4"):
        tuned = trials_of(url, f"cmp:{arm}:tune")
        assert len(tuned) == 3 and {t.state.name for t in tuned} <= {"COMPLETE", "PRUNED"}
        # tuning samples on one fold; its races run leaders on the other, within the budget
        assert {t.user_attrs["fold"] for t in tuned if "race_fold" not in t.user_attrs} == {0}
        # with --sampler-seed, each of the arm's draws is new (its worker opens the arm's study per trial)
        drawn = [(t.user_attrs["lr"], t.user_attrs["gain_init"]) for t in tuned if "race_fold" not in t.user_attrs]
        assert len(set(drawn)) == len(drawn), drawn
        runs = trials_of(url, f"cmp:{arm}:folds")
        assert sorted(t.user_attrs["fold"] for t in runs) == [0, 1]  # each fold once
        best = best_by_hand(tuned)  # what the arm's search returns: the lowest mean over the most folds
        assert {t.user_attrs["lr"] for t in runs} == {best.user_attrs["lr"]}
        assert {t.user_attrs["gain_init"] for t in runs} == {best.user_attrs["gain_init"]}

    code, out, err = cli(capsys, *args)  # rerun: resumes, adds nothing
    assert code == 0 and "resumed" in err and "Verdicts against the reference" in out
    code, _, err = cli(capsys, "worker", "--study", "cmp", "--storage", url, "--devices", "cpu", "--no-progress")
    assert code == 0, err
    assert sum(len(trials_of(url, f"cmp:{a}:{k}")) for a in ("p=1", "p=2", "p=4") for k in ("tune", "folds")) == 15

    code, out, err = cli(capsys, "status", "--study", "cmp", "--storage", url)
    assert code == 0 and "tuning (3 trials per arm)" in out and "Verdicts against the reference" in out, err

    data = load_compare(open_reader(url), "cmp")
    assert list(data.budgets["spent"]) == [3, 3, 3]
    arms = {float(a.value): a for a in stages_answer(data).arms}
    assert sorted(arms) == [1.0, 4.0] and all(a.n_folds == 2 for a in arms.values())
    runs = data.folds
    for arm, value in (("p=1", 1.0), ("p=4", 4.0)):
        mine = runs[runs["arm"] == arm].set_index("fold")["value"]
        ref = runs[runs["arm"] == "p=2"].set_index("fold")["value"]
        assert arms[value].diff == pytest.approx(float((mine - ref).mean()))


def test_a_comparison_refuses_what_cannot_run(sqlite_url, capsys):
    base = ["compare", "--study", "bad", "--storage", sqlite_url, "--preset", "smoke"]
    code, _, err = cli(capsys, *base, "--p", "2")
    assert code == 2 and "at least two values" in err
    code, _, err = cli(capsys, *base, "--p", "1,2", "--tune", "dropout")
    assert code == 2 and "--search dropout=LOW:HIGH" in err
    code, _, err = cli(capsys, *base, "--arms", "n_layer=1,2", "--reference", "3")
    assert code == 2 and "not one of the arms" in err


def test_arm_names_keep_three_digits_and_add_more_only_where_two_arms_would_share_one():
    from lpstudy.study.compare import arm_labels

    assert arm_labels("p", [1.0, 3.14159, math.inf]) == ["p=1", "p=3.14", "p=∞"]
    assert arm_labels("p", [1.0, 1.001, 3.14159]) == ["p=1", "p=1.001", "p=3.142"]  # 4 digits tell them apart
    assert arm_labels("p", [1.0, 1.0 + 2 ** -52]) == ["p=1", "p=1.0000000000000002"]  # the next float after 1
    assert arm_labels("n_layer", [2, 4]) == ["n_layer=2", "n_layer=4"]


@pytest.mark.slow
def test_arms_closer_than_three_digits_get_a_study_each(sqlite_url, capsys):
    code, _, err = cli(capsys, "compare", "--study", "near", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,1.001,2.5", "--budget", "2", "--folds", "2", *QUICK)
    assert code == 0, err
    storage = open_storage(sqlite_url)
    assert sorted(study_names(storage)) == ["near", "near:p=1.001:tune", "near:p=1:tune", "near:p=2.5:tune"]
    for arm, p in (("p=1", 1.0), ("p=1.001", 1.001), ("p=2.5", 2.5)):
        assert load_spec(storage, f"near:{arm}:tune").to_plain()["space"]["p"] == {"type": "fixed", "value": p}


def _storage_file(tmp_path, url: str):
    path = tmp_path / "storage-url"
    path.write_text(url + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working directory without a storage of its own, and no storage in the environment: a
    command that forgets --storage-file reads (or makes) ./storage/lpstudy.db here."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("LPSTUDY_STORAGE", raising=False)
    monkeypatch.delenv("LPSTUDY_STORAGE_FILE", raising=False)
    return folder


def test_compare_takes_its_storage_from_a_storage_file(sqlite_url, tmp_path, elsewhere, capsys):
    code, _, err = cli(capsys, "compare", "--study", "cmp", "--storage-file", _storage_file(tmp_path, sqlite_url),
                       "--preset", "smoke", "--p", "1,2", "--budget", "2", "--folds", "2", *QUICK)
    assert code == 0, err
    assert f"comparison 'cmp' created in {sqlite_url}" in err
    assert sorted(study_names(open_storage(sqlite_url))) == ["cmp", "cmp:p=1:tune", "cmp:p=2:tune"]
    assert not (elsewhere / "storage").exists()


def test_status_of_a_comparison_reads_the_storage_file(sqlite_url, tmp_path, elsewhere, capsys):
    code, _, err = cli(capsys, "compare", "--study", "cmp", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--budget", "2", "--folds", "2", *QUICK)
    assert code == 0, err
    code, out, err = cli(capsys, "status", "--study", "cmp", "--storage-file", _storage_file(tmp_path, sqlite_url))
    assert code == 0, err
    assert "tuning (2 trials per arm)" in out and "needs the p=2 arm" in out
    assert not (elsewhere / "storage").exists()


def test_an_arms_replicate_grid_is_enqueued_by_the_storage_in_one_go(sqlite_url, capsys, monkeypatch):
    """The folds of an arm whose tuning is done are enqueued through the storage (on SQL one
    transaction, retried through an outage), not one Optuna enqueue_trial per cell: before, the
    comparison's worker passed no storage and took the slow, unretried path."""
    import optuna
    from optuna.trial import TrialState

    from lpstudy.study.compare import ensure_folds_study, load_plan
    from lpstudy.study.studies import load_study

    code, _, err = cli(capsys, "compare", "--study", "bulk", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--tune", "lr", "--budget", "1", "--folds", "3", *QUICK)
    assert code == 0, err
    with open_storage(sqlite_url) as storage:
        plan = load_plan(storage, "bulk")
        value = plan.values[0]
        tune, _ = load_study(storage, plan.tune_study("bulk", value))
        trial = tune.ask()
        trial.suggest_float("lr", 1e-4, 1e-2, log=True)
        tune.tell(trial, 1.5)  # the arm's one tuning trial: its tuning is done

        def refused(*args, **kwargs):
            raise AssertionError("a cell enqueued by Optuna's enqueue_trial, not by the storage")

        monkeypatch.setattr(optuna.Study, "enqueue_trial", refused)
        folds = ensure_folds_study(storage, "bulk", plan, value)
        waiting = folds.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        assert sorted(t.system_attrs["fixed_params"]["fold"] for t in waiting) == [0, 1, 2]


def test_a_waiting_tuning_trial_is_the_next_trial_of_a_comparison_not_its_end(sqlite_url, capsys):
    """A waiting trial of an arm's tuning (a race on another fold, a retry) is counted in its budget,
    so no arm is under budget and none is tuned: the next trial is that waiting one. Before, the
    comparison's worker stopped there ('nothing left to run'), 2 of 4 tuning trials run."""
    from lpstudy.study.compare import load_plan, next_study
    from lpstudy.values import RACE_FOLD_ATTR
    from lpstudy.study.studies import load_study

    code, _, err = cli(capsys, "compare", "--study", "w", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--tune", "lr", "--budget", "2", "--folds", "2", *QUICK)
    assert code == 0, err
    with open_storage(sqlite_url) as storage:
        plan = load_plan(storage, "w")
        for value in plan.values:
            tune, _ = load_study(storage, plan.tune_study("w", value))
            trial = tune.ask()
            lr = trial.suggest_float("lr", 1e-4, 1e-2, log=True)
            tune.tell(trial, 1.5)
            tune.enqueue_trial({"lr": lr}, user_attrs={RACE_FOLD_ATTR: 1})  # the arm's second trial, waiting
        first = next_study(storage, "w", plan)
        assert first == plan.tune_study("w", plan.values[0])
