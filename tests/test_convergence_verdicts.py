"""Convergence as an answer, on planted learning curves with a known truth: the steps to reach a
loss and the area under the curve, each with a verdict per arm through the final loss's engine, the
runs that never arrive counted, and the rate of wrong verdicts where nothing is planted."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.analysis.convergence import run_endpoints
from lpstudy.results.answers import AnswerOptions
from lpstudy.results.answers import study_answer
from lpstudy.results.reading.frames import StudyData, StudyInfo

STEPS = np.arange(0, 2001, 50)  # 41 evaluations of a 2000-step run
START, FINAL, TAU = 4.17, 1.5, 200.0  # ln 65 at step 0, the loss every arm ends at, the reference's time scale


def planted_study(slowness: dict[float, float], folds: int = 10, seed: int = 0, pruned: dict | None = None,
                  diverged: dict | None = None, noise: float = 0.002, jitter: float = 0.05,
                  shared: bool = False) -> StudyData:
    """A replicate whose arm p's validation curve is FINAL + (START − FINAL)·exp(−t / (TAU·slowness[p])):
    every arm ends at the same loss, an arm of slowness 1.2 takes 20 % more steps to get anywhere.
    Per run: its time scale jittered (lognormal, `jitter`), its loss noised (`noise` nats), a fold's
    shift shared by every arm. pruned {(p, fold): step}: stopped there; diverged {(p, fold): step}:
    its loss ln 65 from there and its run diverged. shared: a share 1/K of the jitter's variance is
    one shock to the whole arm, so that its folds correlate as K-fold CV's shared training text
    makes them (Nadeau & Bengio 2003), the case the corrected interval is for."""
    rng = np.random.default_rng(seed)
    shift = rng.normal(0, 0.02, folds)
    trials, curves, trial_id = [], [], 0
    for p, slow in slowness.items():
        arm_shock = rng.normal(0, jitter * math.sqrt(1 / folds)) if shared else 0.0
        own = jitter * math.sqrt(1 - 1 / folds) if shared else jitter
        for fold in range(folds):
            trial_id += 1
            tau = TAU * slow * math.exp(arm_shock + rng.normal(0, own))
            loss = FINAL + shift[fold] + (START - FINAL) * np.exp(-STEPS / tau) + rng.normal(0, noise, len(STEPS))
            stop = (pruned or {}).get((p, fold))
            blown = (diverged or {}).get((p, fold))
            keep = STEPS <= (stop if stop is not None else blown if blown is not None else STEPS[-1])
            if blown is not None:
                loss = np.where(STEPS >= blown, START, loss)
            state = "PRUNED" if stop is not None else "COMPLETE"
            value = START if blown is not None else float(loss[keep][-1])
            trials.append({"number": trial_id - 1, "trial_id": trial_id, "state": state, "value": value, "p": p,
                           "fold": fold, "folds": folds, "diverged": blown is not None, "final_val_loss": value,
                           "max_steps": int(STEPS[-1])})
            curves.append(pd.DataFrame({"trial_id": trial_id, "trial_number": trial_id - 1, "step": STEPS[keep],
                                        "val_loss": loss[keep], "elapsed_s": STEPS[keep] / 100.0}))
    return StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=pd.DataFrame(trials),
                     curves=pd.concat(curves, ignore_index=True))


def answer_json(data: StudyData, options: AnswerOptions = AnswerOptions()) -> dict:
    """The answer as `lpstudy verdict --json` gives it."""
    return study_answer(data, options).to_json()


def rows_of(answer: dict, endpoint: str) -> dict:
    return {a["p"]: a for a in answer["convergence"]["arms"] if a["endpoint"] == endpoint}


def test_an_arm_that_converges_20_percent_slower_to_the_same_loss_is_worse_on_convergence_equivalent_on_loss():
    answer = answer_json(planted_study({2.0: 1.0, 3.0: 1.2}))
    (final,) = answer["arms"]
    assert final["verdict"] == "equivalent"  # the same final loss, within ±0.5 %
    steps = rows_of(answer, "steps_to_threshold")[3.0]
    assert steps["verdict"] == "worse" and steps["rel_low"] > 0.1 and steps["rel_low"] < 0.2 < steps["rel_high"]
    assert steps["censored"] == 0 and steps["n_folds"] == 10
    assert rows_of(answer, "auc")[3.0]["verdict"] == "worse"  # more loss on the way there
    convergence = answer["convergence"]
    assert convergence["threshold"] == pytest.approx(round(convergence["threshold"], 3))  # stated as it is used
    assert FINAL < convergence["threshold"] < FINAL + 0.1 and convergence["horizon"] == 2000
    assert "p = 3 reaches it" in answer["sentence"] and "later" in answer["sentence"]
    rmst = {r["p"]: r for r in convergence["restricted_mean"]}
    assert rmst[3.0]["rmst"] > 1.1 * rmst[2.0]["rmst"]  # Kaplan–Meier's restricted mean says it too (unpaired:
    assert rmst[2.0]["low"] < rmst[2.0]["rmst"] < rmst[2.0]["high"]  # wider than the paired interval)


def test_a_faster_arm_is_better_and_said_sooner_with_its_interval():
    """p = 4 converges 30 % sooner: better, its interval beyond the ±5 % ROPE, and so said."""
    answer = answer_json(planted_study({2.0: 1.0, 4.0: 0.7}, seed=3))
    steps = rows_of(answer, "steps_to_threshold")[4.0]
    assert steps["verdict"] == "better" and steps["rel_low"] < -0.25 < steps["rel_high"] < -0.05  # beyond the ROPE
    assert f"p = 4 reaches it {100 * -steps['rel_diff']:.0f} % sooner" in answer["convergence"]["sentence"]


def test_runs_that_never_arrive_are_counted_pruned_ones_censored():
    """p = 3 converges as p = 2 does, but 2 of its runs diverge before the threshold and 3 are pruned
    before it: the diverged ones count as never arriving within the horizon (so p = 3 is slower on
    average, never faster for losing them), the pruned ones leave their folds' pairs and are
    censored in Kaplan–Meier, where 5 of the 7 runs at risk reach it."""
    study = planted_study({2.0: 1.0, 3.0: 1.0}, seed=2, pruned={(3.0, 0): 400, (3.0, 1): 400, (3.0, 2): 400},
                          diverged={(3.0, 3): 300, (3.0, 4): 300})
    answer = answer_json(study)
    steps = rows_of(answer, "steps_to_threshold")[3.0]
    assert steps["censored"] == 5 and steps["censored_by"] == {"diverged": 2, "pruned": 3}
    assert steps["n_folds"] == 7  # the pruned folds have no restricted steps to pair
    reference = answer["convergence"]["reference"]["steps_to_threshold"]["mean"]
    assert steps["mean"] > reference + 0.2 * (2000 - reference)  # two of seven at the horizon
    (curve,) = [c for c in answer["convergence"]["reach"] if c["p"] == 3.0]
    assert curve["reached"][-1] == pytest.approx(5 / 7)
    rmst = {r["p"]: r for r in answer["convergence"]["restricted_mean"]}
    assert rmst[3.0]["censored"] == 5 and rmst[3.0]["rmst"] > rmst[2.0]["rmst"] + 200
    auc = rows_of(answer, "auc")[3.0]
    assert auc["mean"] > answer["convergence"]["reference"]["auc"]["mean"]  # ln 65 after diverging counts


def test_endpoints_of_each_kind_of_run():
    study = planted_study({2.0: 1.0}, folds=4, pruned={(2.0, 0): 100}, diverged={(2.0, 1): 300})
    trials = study.trials.copy()
    trials.loc[trials["fold"] == 3, "state"] = "RUNNING"  # and evaluated up to step 300 so far
    curves = study.curves[(study.curves["trial_id"] != 4) | (study.curves["step"] <= 300)]
    ends = run_endpoints(curves, trials, threshold=1.6, horizon=2000)
    assert list(ends["censored"]) == ["pruned", "diverged", "", "running"]
    assert ends["time"].tolist()[:2] == [100, 2000] and ends["time"].iloc[3] == 300  # the pruned run censored where it stopped; the diverged at the horizon
    assert math.isnan(ends["restricted_steps"].iloc[0]) and ends["restricted_steps"].iloc[1] == 2000
    assert ends["restricted_steps"].iloc[2] == ends["steps"].iloc[2] < 2000
    assert ends["seconds"].iloc[2] == ends["steps"].iloc[2] / 100
    assert ends["failed"].tolist() == [False, True, False, False]
    assert math.isnan(ends["auc"].iloc[0]) and math.isnan(ends["auc"].iloc[3]) and ends["auc"].iloc[1] > 3.5


def test_the_threshold_is_the_readers_where_given():
    answer = answer_json(planted_study({2.0: 1.0, 3.0: 1.2}), AnswerOptions(threshold=2.0))
    assert answer["convergence"]["threshold"] == 2.0 and answer["convergence"]["threshold_rule"] == "chosen by the reader"
    assert "Convergence to 2 nats" in answer["sentence"]


def says_sooner_or_later(arm: dict) -> bool:
    """Whether the sentence claims a direction for the arm: better or worse (beyond the ROPE), or
    sooner or later by an undecided amount (its interval excludes 0 but reaches into the ROPE)."""
    return arm["verdict"] in ("better", "worse") or arm.get("region") == "different, size undecided"


@pytest.mark.slow
def test_no_effect_gives_a_false_sooner_or_later_at_most_at_the_nominal_rate():
    """Three arms that converge as the reference does, their folds correlated as K-fold CV makes them,
    150 planted studies: a study with any arm said to reach it sooner or later (better, worse, or a
    difference of undecided size; Holm across the arms) at most 5 % of the time, give or take the binomial's spread (the bound below fails with
    probability about 1 % at a true 5 %)."""
    wrong = 0
    n = 150
    for seed in range(n):
        answer = answer_json(planted_study({2.0: 1.0, 1.0: 1.0, 3.0: 1.0, 4.0: 1.0}, seed=seed, jitter=0.1,
                                            shared=True))
        wrong += any(says_sooner_or_later(a) for a in answer["convergence"]["arms"] if a["endpoint"] == "steps_to_threshold")
    assert wrong / n <= 0.09


def test_kaplan_meier_is_the_product_limit_and_its_restricted_mean_the_area_with_greenwoods_variance():
    from lpstudy.results.analysis.survival import kaplan_meier, restricted_mean

    # 5 runs: events at 1, 2, 4, 5; one censored at 3: S = 4/5, 3/5, then 3/5 · 1/2 at 4, 0 at 5
    curve = kaplan_meier([1, 2, 3, 4, 5], [1, 1, 0, 1, 1])
    assert curve["survival"].tolist() == pytest.approx([1.0, 0.8, 0.6, 0.3, 0.0])
    inside = curve.iloc[1:3]
    assert ((inside["low"] < inside["survival"]) & (inside["survival"] < inside["high"])).all()
    assert restricted_mean(curve, 4.5)[0] == pytest.approx(1 + 0.8 + 0.6 * 2 + 0.3 * 0.5)
    rng = np.random.default_rng(1)  # without censoring: the mean of min(T, τ), and the plug-in variance of a mean
    times = rng.exponential(900, 400)
    capped = np.minimum(times, 1200)
    mean, variance = restricted_mean(kaplan_meier(times, np.ones(400)), 1200.0)
    assert mean == pytest.approx(capped.mean(), rel=1e-9)
    assert variance == pytest.approx(capped.var() / 400, rel=1e-6)
    truth = 900 * (1 - math.exp(-1200 / 900))  # E[min(T, 1200)] of an exponential with mean 900
    assert abs(mean - truth) < 3 * math.sqrt(variance)


def test_the_groups_curves_come_in_the_order_the_page_gives_them_not_the_order_of_the_runs():
    """A page passes a search's p groups in p order; its legend lists the curves in the order they come."""
    from lpstudy.results.analysis.survival import group_survival

    runs = pd.Index([11, 12, 13, 14, 15, 16], name="trial_id")  # the runs as the study holds them: p 4 first
    endpoints = pd.DataFrame({"time": [300.0, 500, 200, 400, 600, 250], "reached": [1, 1, 0, 1, 1, 1]}, index=runs)
    labels = pd.Series(["4", "1", "2", "4", "2", "1"], index=runs)
    ordered = labels.sort_values(key=lambda v: v.astype(float), kind="stable")
    reach, restricted = group_survival(endpoints, ordered, horizon=1000.0)
    assert list(pd.unique(reach["group"])) == list(restricted["group"]) == ["1", "2", "4"]


def test_lpstudy_verdict_gives_convergence_in_json_and_in_words(seeded, capsys):
    import json

    from tests.study_helpers import cli

    url, _ = seeded
    code, out, _ = cli(capsys, "verdict", "--study", "grid", "--storage", url, "--json", "--threshold", "3.0")
    assert code == 0
    convergence = json.loads(out)["convergence"]
    assert convergence["threshold"] == 3.0 and convergence["threshold_rule"] == "chosen by the reader"
    steps = [a for a in convergence["arms"] if a["endpoint"] == "steps_to_threshold"]
    assert steps and {"value", "diff", "low", "high", "verdict", "censored", "censored_by"} <= set(steps[0])
    assert {r["value"] for r in convergence["restricted_mean"]} >= {a["value"] for a in steps}
    code, out, _ = cli(capsys, "verdict", "--study", "grid", "--storage", url)
    assert code == 0 and "Convergence to " in out and "restricted mean steps" in out
    code, _, err = cli(capsys, "verdict", "--study", "grid", "--storage", url, "--threshold", "-1")
    assert code == 2 and "threshold" in err
