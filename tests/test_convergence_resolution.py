"""Convergence read at the resolution it was measured: the crossing interpolated between the two
evaluations around it, no "as soon" that the evaluation interval, a difference that does not vary or
runs that never arrived cannot support, a ROPE in steps or per cent, and a restricted mean whose
interval stays inside [0, horizon] with a width that pruned runs do not erase."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.errors import UserError
from lpstudy.results.analysis.convergence import run_endpoints, steps_to_threshold
from lpstudy.results.answers import AnswerOptions, study_answer
from lpstudy.results.answers.options import StepsRope, parse_steps_rope
from lpstudy.results.reading.frames import StudyData, StudyInfo


def study(taus: dict[float, list[float]], every: int = 25, max_steps: int = 300, pruned: dict | None = None
          ) -> StudyData:
    """A replicate whose run (p, fold) follows 1.5 + 2.67·exp(−step / taus[p][fold]), evaluated every
    `every` steps; pruned {(p, fold): step}: stopped there."""
    steps = np.arange(0, max_steps + 1, every)
    trials, curves, trial_id = [], [], 0
    for p, per_fold in taus.items():
        for fold, tau in enumerate(per_fold):
            trial_id += 1
            stop = (pruned or {}).get((p, fold))
            keep = steps <= (stop if stop is not None else max_steps)
            loss = 1.5 + 2.67 * np.exp(-steps[keep] / tau)
            trials.append({"number": trial_id - 1, "trial_id": trial_id, "state": "COMPLETE" if stop is None
                           else "PRUNED", "value": float(loss[-1]), "p": p, "fold": fold, "folds": len(per_fold),
                           "diverged": False, "final_val_loss": float(loss[-1]), "max_steps": max_steps})
            curves.append(pd.DataFrame({"trial_id": trial_id, "trial_number": trial_id - 1, "step": steps[keep],
                                        "val_loss": loss, "elapsed_s": steps[keep] / 10.0}))
    return StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=pd.DataFrame(trials),
                     curves=pd.concat(curves, ignore_index=True))


def steps_row(answer: dict, p: float) -> dict:
    (row,) = [a for a in answer["convergence"]["arms"] if a["endpoint"] == "steps_to_threshold" and a["p"] == p]
    return row


def test_the_crossing_is_interpolated_between_the_two_evaluations_around_it():
    curves = pd.DataFrame({"trial_number": [0, 0, 0, 1, 1], "step": [0, 100, 200, 0, 100],
                           "val_loss": [3.0, 2.5, 1.5, 1.9, 1.8], "elapsed_s": [0, 10, 20, 0, 10]})
    # run 0 crosses 2.0 halfway from 2.5 (step 100) to 1.5 (step 200); run 1 is below it at its first evaluation
    assert steps_to_threshold(curves, 2.0).tolist() == [150.0, 0.0]
    trials = pd.DataFrame({"trial_id": [0, 1], "state": "COMPLETE", "diverged": False, "value": [1.5, 1.8],
                           "max_steps": 200})
    ends = run_endpoints(curves.rename(columns={"trial_number": "trial_id"}), trials, 2.0, 200)
    assert ends["steps"].tolist() == [150.0, 0.0] and ends["seconds"].tolist() == [15.0, 0.0]
    assert ends["resolution"].tolist() == [100.0, 0.0] and ends["at_first"].tolist() == [False, True]


def test_both_arms_crossing_inside_one_evaluation_interval_are_never_equivalent_and_the_answer_says_what_would_resolve():
    """smoke's case: evaluations 25 steps apart, a ROPE of ±5 % of about 230 steps (±11.5): p = 3
    crosses within a step of p = 2 on every fold, which the evaluations cannot tell from 12 steps later."""
    rng = np.random.default_rng(0)
    base = 55 + rng.normal(0, 3, 10)
    answer = study_answer(study({2.0: list(base), 3.0: list(base * 1.002)})).to_json()
    row = steps_row(answer, 3.0)
    assert row["verdict"] == "undecided" and row["region"] == "below the resolution"
    margin = answer["convergence"]["rope"]["steps_to_threshold"]["absolute"]
    assert 10 < margin < 25 and "25 steps apart" in row["unresolved"] and row["eval_interval_to_resolve"] == 10
    assert answer["convergence"]["resolution"]["eval_interval"] == 25
    assert "as soon" not in answer["sentence"] and "eval_interval ≤ 10 would resolve it" in answer["sentence"]
    # the same runs evaluated every 2 steps resolve the ROPE: equivalent
    fine = study_answer(study({2.0: list(base), 3.0: list(base * 1.002)}, every=2)).to_json()
    assert steps_row(fine, 3.0)["verdict"] == "equivalent" and "unresolved" not in steps_row(fine, 3.0)


def test_a_difference_of_zero_variance_is_no_evidence_of_equivalence():
    """Identical curves on every fold read a difference of exactly 0: a t-test would call that
    equivalent with p = 0; it is undecided, with why."""
    taus = [50.0, 55, 60, 65, 70]
    row = steps_row(study_answer(study({2.0: taus, 3.0: taus}, every=1)).to_json(), 3.0)
    assert row["verdict"] == "undecided" and "do not vary" in row["unresolved"]


def test_no_run_reaching_the_threshold_is_never_as_soon():
    answer = study_answer(study({2.0: [50.0, 55, 60], 3.0: [52.0, 57, 62]}),
                          AnswerOptions(threshold=1.0)).to_json()
    row = steps_row(answer, 3.0)
    assert row["verdict"] == "undecided" and "no run" in row["unresolved"]
    assert "as soon" not in answer["sentence"] and "6 of 6 runs never reached it" in answer["sentence"]


def test_a_threshold_above_the_first_loss_says_so_and_what_to_do():
    answer = study_answer(study({2.0: [50.0, 55, 60], 3.0: [52.0, 57, 62]}), AnswerOptions(threshold=5.0)).to_json()
    assert "already there at its first evaluation" in answer["convergence"]["sentence"]
    assert "lower --threshold" in answer["convergence"]["sentence"]


def test_the_rope_of_the_steps_is_set_in_steps_or_per_cent():
    assert parse_steps_rope("50") == StepsRope(50.0, relative=False)
    assert parse_steps_rope("5%") == parse_steps_rope("0.05") == StepsRope(0.05)
    for bad in ("soon", "0", "-3%"):
        with pytest.raises(UserError):
            parse_steps_rope(bad)
    data = study({2.0: [50.0, 55, 60, 65], 3.0: [51.0, 56, 61, 66]}, every=5)
    answer = study_answer(data, AnswerOptions(convergence_rope="30")).to_json()
    rope = answer["convergence"]["rope"]["steps_to_threshold"]
    assert rope["absolute"] == 30 and rope["words"] == "±30 steps"


def test_the_restricted_means_interval_stays_inside_the_horizon_and_keeps_its_width_with_pruned_runs():
    # p = 3: two runs pruned before the threshold, one reaching it: Greenwood's variance is 0 there
    answer = study_answer(study({2.0: [20.0, 25, 30], 3.0: [400.0, 400, 20]}, every=10, max_steps=200,
                                pruned={(3.0, 0): 30, (3.0, 1): 30})).to_json()
    rmst = {r["p"]: r for r in answer["convergence"]["restricted_mean"]}
    assert rmst[3.0]["high"] - rmst[3.0]["low"] > 50
    # p = 2 every run near the start, p = 3 near the horizon: both intervals within [0, 200]
    for r in study_answer(study({2.0: [2.0, 2.5, 3.0], 3.0: [150.0, 170, 400]}, every=10,
                                max_steps=200)).to_json()["convergence"]["restricted_mean"]:
        assert 0 <= r["low"] <= r["rmst"] <= r["high"] <= 200
