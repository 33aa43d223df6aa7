"""A comparison that counts its tuning (`compare --tunings T --seeds S`): each arm tuned T times
independently (its own sampler seed and tuning fold), each tuning's chosen configuration measured on the
K folds with S training seeds the tuning never ran, no (configuration, fold, seed) cell run twice; the
verdict's interval spans the tunings where T >= 2 and its sentence says what it compares and where the
budget cannot tune the searched fields.

The issue's case: `compare --p 1,2 --budget 2 --folds 2` called p = 1 worse than p = 2 beyond the ROPE
(+0.2993 [+0.2989, +0.2996]) from two lucky configurations, its interval holding only the folds' noise of
two fixed configurations, and its fold stage reran the tuning's own runs (same fold, same seed)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from lpstudy.db.optuna_storage import open_storage
from lpstudy.results.answers import study_answer
from lpstudy.results.reading.compare import CompareData, _study_data
from lpstudy.study.compare import ensure_folds_study, load_plan, make_plan
from lpstudy.study.studies import load_study
from lpstudy.values import RACE_FOLD_ATTR
from tests.study_helpers import cli

QUICK = ["--set", "max_steps=20", "--set", "eval_interval=10", "--set", "eval_iters=1"]
SEARCHED = ("lr", "gain_init")


def _tune(storage, plan, name: str) -> list[tuple]:
    """Every arm's tunings run as a worker would (each trial on its tuning fold with the tuning's
    training seed; the chosen configuration also raced on the next fold), written by hand: no training.
    Returns their (arm, configuration, fold, seed) cells."""
    cells = []
    for value, tuning in plan.arm_tunings():
        tune, spec = load_study(storage, plan.tune_study(name, value, tuning))
        seed = int(spec.base_config().seed)
        drawn = []
        for i in range(plan.budget):
            trial = tune.ask()
            params = {field: trial.suggest_float(field, 1e-4, 1e-2, log=True) if field == "lr"
                      else trial.suggest_float(field, 2.0, 64.0, log=True) for field in SEARCHED}
            tune.tell(trial, 2.0 + 0.1 * i)
            drawn.append(params)
            cells.append((value, tuple(params[f] for f in SEARCHED), int(spec.base_config().fold), seed))
        raced = (int(spec.base_config().fold) + 1) % plan.folds
        tune.enqueue_trial(drawn[0], user_attrs={RACE_FOLD_ATTR: raced})  # the leader on a second fold
        trial = tune.ask()
        tune.tell(trial, 2.0)
        cells.append((value, tuple(drawn[0][f] for f in SEARCHED), raced, seed))
    return cells


def _fold_cells(storage, plan, name: str) -> list[tuple]:
    """The (arm, configuration, fold, seed) of every cell the fold stages enqueued."""
    cells = []
    for value, tuning in plan.arm_tunings():
        folds = ensure_folds_study(storage, name, plan, value, tuning)
        assert folds is not None
        _, spec = load_study(storage, plan.folds_study(name, value, tuning))
        base = spec.base_config()
        for trial in folds.get_trials(deepcopy=False):
            cell = trial.system_attrs["fixed_params"]
            cells.append((value, tuple(getattr(base, f) for f in SEARCHED), int(cell["fold"]),
                          int(cell.get("seed", base.seed))))
    return cells


@pytest.mark.parametrize("extra,tunings,seeds", [([], 1, 1), (["--seeds", "2", "--tunings", "2"], 2, 2)])
def test_the_fold_stage_measures_with_fresh_seeds_and_never_runs_a_cell_twice(sqlite_url, capsys, extra, tunings,
                                                                            seeds):
    code, _, err = cli(capsys, "compare", "--study", "c", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--budget", "3", "--folds", "3", *extra, *QUICK)
    assert code == 0, err
    with open_storage(sqlite_url) as storage:
        plan = load_plan(storage, "c")
        assert (plan.tunings, plan.seeds) == (tunings, seeds)
        tuned = _tune(storage, plan, "c")
        measured = _fold_cells(storage, plan, "c")
    # every (arm, tuning): K folds x S seeds, the tuning's own folds among them
    assert len(measured) == 2 * tunings * 3 * seeds
    counts = Counter(tuned + measured)
    assert max(counts.values()) == 1, [cell for cell, n in counts.items() if n > 1]
    tuning_seeds = {seed for *_, seed in tuned}
    assert not tuning_seeds & {seed for *_, seed in measured}  # fresh seeds, on every fold the tuning used too
    assert {fold for _, _, fold, _ in measured} == {0, 1, 2}
    # the arms of one tuning are paired by (fold, seed): they train with the same seeds
    for tuning in range(tunings):
        per_arm = [{(f, s) for v, _, f, s in _fold_cells_of(measured, plan, value, tuning)} for value in plan.values]
        assert per_arm[0] == per_arm[1] and len(per_arm[0]) == 3 * seeds


def _fold_cells_of(measured, plan, value, tuning):
    """The cells of one (arm, tuning): the fold stage of each enqueues K x S in order, arm by arm."""
    size = plan.folds * plan.seeds
    index = plan.arm_tunings().index((value, tuning))
    return measured[index * size:(index + 1) * size]


def test_tunings_and_seeds_with_until_decided_are_refused_in_one_line(sqlite_url, capsys):
    base = ["compare", "--study", "r", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2", "--until-decided"]
    for flag in ("--tunings", "--seeds"):
        code, _, err = cli(capsys, *base, flag, "2")
        assert code == 2 and f"{flag} and --until-decided" in err and "Traceback" not in err


def test_a_budget_too_small_to_tune_is_said_before_the_run(sqlite_url, capsys):
    code, _, err = cli(capsys, "compare", "--study", "b", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--budget", "2", "--folds", "2", *QUICK)
    assert code == 0, err
    assert "a budget of 2 trials cannot tune 2 searched fields (lr, gain_init): it needs at least 3" in err
    assert make_plan("p", ["1", "2"], ["lr"], 5, 2, "smoke").budget_note().startswith(
        "a budget of 5 trials is spent by the sampler's 10 random startup trials")
    assert make_plan("p", ["1", "2"], ["lr"], 11, 2, "smoke").budget_note() is None


def _planted(plan, offsets: list[float], noise: float = 0.0003) -> CompareData:
    """A comparison's fold stages as load_compare reads them: per tuning t, p = 2's configuration at a
    loss of 2.0 and p = 1's at 2.0 + offsets[t] (the luck of what that tuning chose), on each fold with
    the fold stage's seeds and a little fold noise."""
    rng = np.random.default_rng(0)
    rows = []
    for tuning, offset in enumerate(offsets):
        for value in plan.values:
            for fold in range(plan.folds):
                loss = 2.0 + (offset if value == 1.0 else 0.0) + noise * rng.standard_normal()
                rows.append({"arm": plan.label(value), "p": value, "fold": fold, "folds": plan.folds,
                             "seed": plan.fold_seed(tuning), "tuning": tuning, "state": "COMPLETE", "value": loss,
                             "final_val_loss": loss, "diverged": False, "study": plan.folds_study("c", value, tuning),
                             "trial_id": len(rows), "number": fold})
    return CompareData("c", plan, pd.DataFrame(columns=["arm"]), pd.DataFrame(rows), plan.label(plan.reference))


def test_one_tuning_says_what_it_compares_and_that_the_tunings_luck_is_not_in_its_interval():
    plan = make_plan("p", ["1", "2"], ["lr", "gain_init"], 2, 2, "smoke")
    answer = study_answer(_study_data(_planted(plan, [0.2993])))
    arm = answer.arms[0]
    assert arm.verdict == "worse"  # the folds' noise of two fixed configurations: it is what they say
    assert answer.sentence.startswith("p = 1 tuned with 2 trials against p = 2 tuned with 2: ")
    assert "not the luck of the tuning that chose them (--tunings T counts it)" in answer.sentence
    assert "cannot tune 2 searched fields" in answer.sentence  # the budget, said in the verdict too
    assert answer.tuning.budget == 2 and answer.tuning.tunings == 1 and not answer.tuning.counted


def test_with_tunings_the_verdict_spans_them_and_lucky_draws_are_not_a_difference():
    """Three tunings of p = 1 drew +0.30, +0.28 and -0.20 nats against p = 2's: the folds of each are
    tight, so an interval of the folds alone calls p = 1 worse; the tunings disagree, so a verdict that
    counts the tuning cannot."""
    plan = make_plan("p", ["1", "2"], ["lr", "gain_init"], 2, 2, "smoke", tunings=3)
    answer = study_answer(_study_data(_planted(plan, [0.30, 0.28, -0.20])))
    arm = answer.arms[0]
    assert arm.verdict == "undecided" and arm.tunings == 3
    means = np.array([0.30, 0.28, -0.20])
    assert arm.diff == pytest.approx(means.mean(), abs=1e-3)
    half = arm.high - arm.diff  # a t interval over the three tunings' mean differences
    from scipy import stats

    assert half == pytest.approx(stats.t.ppf(0.975, 2) * means.std(ddof=1) / np.sqrt(3), rel=0.02)
    assert answer.sentence.startswith("p = 1 tuned with 2 trials against p = 2 tuned with 2 (3 independent tunings")
    # the same tunings all unlucky alike: decided, over the tunings
    alike = study_answer(_study_data(_planted(plan, [0.30, 0.29, 0.31]))).arms[0]
    assert alike.verdict == "worse" and alike.tunings == 3


@pytest.mark.slow
def test_a_comparison_with_tunings_and_seeds_runs_each_cell_once_and_its_verdict_spans_the_tunings(sqlite_url,
                                                                                                   capsys):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.reading.compare import compare_progress, load_compare, stages_answer
    from tests.study_helpers import trials_of

    args = ["compare", "--study", "t", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2", "--tune", "lr",
            "--budget", "1", "--folds", "2", "--tunings", "2", "--seeds", "2", "--sampler-seed", "4", *QUICK]
    code, _, err = cli(capsys, *args)
    assert code == 0 and "2 independent tunings per arm" in err, err
    code, _, err = cli(capsys, "worker", "--study", "t", "--storage", sqlite_url, "--devices", "cpu", "--no-progress")
    assert code == 0, err
    runs = []
    for arm in ("p=1", "p=2"):
        for tune, folds in (("tune", "folds"), ("tune2", "folds2")):
            tuned = trials_of(sqlite_url, f"t:{arm}:{tune}")
            measured = trials_of(sqlite_url, f"t:{arm}:{folds}")
            assert len(tuned) == 1 and len(measured) == 2 * 2  # K folds x S seeds
            runs += [(arm, t.user_attrs["lr"], t.user_attrs["fold"], t.user_attrs["seed"]) for t in tuned + measured]
        # each tuning on its own fold with its own sampler seed
        assert {trials_of(sqlite_url, f"t:{arm}:{s}")[0].user_attrs["fold"] for s in ("tune", "tune2")} == {0, 1}
    assert len(runs) == len(set(runs)) == 2 * 2 * (1 + 4)  # no (configuration, fold, seed) twice
    data = load_compare(open_reader(sqlite_url), "t")
    progress = compare_progress(data)  # every (arm, tuning, fold, seed) counted once, nothing left
    assert progress.done and progress.cells_done == progress.cells_total == 2 * 2 * 2 * 2
    assert progress.tuning_spent == progress.tuning_total == 2 * 2
    code, out, err = cli(capsys, "status", "--study", "t", "--storage", sqlite_url)
    assert code == 0 and "folds 16/16 runs" in out and "tuned with 1 trial" in out, err
    answer = stages_answer(data)
    assert answer.tuning.tunings == 2 and answer.arms[0].tunings == 2
    assert answer.sentence.startswith("p = 1 tuned with 1 trial against p = 2 tuned with 1 (2 independent tunings")


def test_convergence_spans_the_tunings_as_the_final_loss_does():
    """The convergence endpoints pair runs by tuning and fold too: two tunings' fold stages, each a planted
    replicate of p = 1 against p = 2, give one observation per tuning, not four folds of one CV."""
    from lpstudy.results.answers import AnswerOptions
    from lpstudy.results.reading.frames import StudyData
    from tests.test_convergence_verdicts import planted_study

    parts = [planted_study({2.0: 1.0, 1.0: 1.2}, folds=4, seed=seed) for seed in (1, 2)]
    offset = int(parts[0].trials["trial_id"].max())
    trials = pd.concat([parts[0].trials.assign(tuning=0),
                        parts[1].trials.assign(tuning=1, trial_id=lambda f: f["trial_id"] + offset,
                                               number=lambda f: f["number"] + offset)], ignore_index=True)
    curves = pd.concat([parts[0].curves, parts[1].curves.assign(trial_id=lambda f: f["trial_id"] + offset,
                                                                trial_number=lambda f: f["trial_number"] + offset)],
                       ignore_index=True)
    data = StudyData(name="t", info=parts[0].info, trials=trials, curves=curves)
    answer = study_answer(data, AnswerOptions())
    assert answer.arms[0].tunings == 2
    assert answer.convergence.arms and all(arm.tunings == 2 for arm in answer.convergence.arms)


def test_a_comparison_stored_before_fresh_seeds_resumes_as_it_began(sqlite_url, capsys):
    """Its plan has no fresh_seeds: rerunning the same `compare` resumes it (no 'another plan'), and its
    fold stage keeps the tuning's seed, as it began."""
    import optuna

    from lpstudy.study.compare import COMPARE_ATTR

    args = ["compare", "--study", "old", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2",
            "--budget", "2", "--folds", "2", *QUICK]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    parent = optuna.load_study(study_name="old", storage=sqlite_url)
    plain = dict(parent.user_attrs[COMPARE_ATTR])
    del plain["fresh_seeds"]
    parent.set_user_attr(COMPARE_ATTR, plain)
    code, _, err = cli(capsys, *args)
    assert code == 0 and "resumed" in err, err
    with open_storage(sqlite_url) as storage:
        plan = load_plan(storage, "old")
    assert not plan.fresh_seeds and plan.fold_seed(0) == plan.training_seed()


@pytest.mark.slow  # the dashboard rendered: some 20 s
def test_the_compare_page_names_the_tunings_and_seeds(sqlite_url, capsys, monkeypatch):
    from tests.test_app import run_page

    code, _, err = cli(capsys, "compare", "--study", "t", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2",
                       "--budget", "3", "--folds", "3", "--tunings", "2", "--seeds", "2", *QUICK)
    assert code == 0, err
    monkeypatch.setenv("LPSTUDY_STORAGE", sqlite_url)
    at = run_page("Compare", sqlite_url, "t")
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "2 independent tunings of 3 trials each (on folds 0, 1)" in text and "2 training seeds a fold" in text
