"""The edge cases of a verdict (issue 52): each plants the case in a study's trials and reads the answer
as `lpstudy verdict --json` gives it: an arm every run of which failed, a cell run twice, a pruned run
in a replicate, the interim counts per arm, and the one interval per arm that its verdict was decided on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

MARGIN = 0.01


def trials_of(cells: list[dict]) -> pd.DataFrame:
    """Trials from (p, fold, value[, state, diverged, number]) cells; K = the largest fold + 1."""
    k = max(c["fold"] for c in cells) + 1
    rows = []
    for i, cell in enumerate(cells):
        number = cell.get("number", i)
        rows.append({"number": number, "trial_id": number + 1, "state": cell.get("state", "COMPLETE"),
                     "value": cell.get("value"), "final_val_loss": cell.get("value"), "p": cell["p"],
                     "fold": cell["fold"], "folds": k, "diverged": cell.get("diverged", False)})
    return pd.DataFrame(rows)


def grid(losses: dict[float, list[float]], marks: dict | None = None) -> list[dict]:
    return [{"p": p, "fold": fold, "value": loss, **(marks or {}).get((p, fold), {})}
            for p, values in losses.items() for fold, loss in enumerate(values)]


def answer_of(trials: pd.DataFrame, **options) -> dict:
    from lpstudy.results.answers import AnswerOptions, study_answer
    from lpstudy.results.reading.frames import StudyData, StudyInfo

    data = StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=trials,
                     curves=pd.DataFrame())
    return study_answer(data, AnswerOptions(**options)).to_json()


REF = [2.80, 2.82, 2.79, 2.81, 2.80]


def test_an_arm_that_diverged_on_every_fold_is_worse_by_the_failure_rule_and_says_so():
    cells = grid({2.0: REF, 4.0: [float("nan")] * 5}, {(4.0, f): {"diverged": True} for f in range(5)})
    answer = answer_of(trials_of(cells))
    (arm,) = answer["arms"]
    assert arm["verdict"] == "worse" and arm["all_failed"] and arm["failed_runs"] == 5
    assert arm["region"] == "every run failed" and arm["holds_up_to_rho"] is None
    assert "p = 4 (5 of 5 runs) is worse than p = 2 by the failure rule" in answer["sentence"]
    assert "undecided" not in answer["sentence"]


def test_an_arm_whose_every_run_ended_fail_is_worse_but_not_where_the_reference_failed_too():
    cells = grid({2.0: REF, 4.0: [None] * 5}, {(4.0, f): {"state": "FAIL"} for f in range(5)})
    (arm,) = answer_of(trials_of(cells))["arms"]
    assert arm["verdict"] == "worse"
    both = grid({2.0: [None] * 5, 4.0: [None] * 5},
                {(p, f): {"state": "FAIL"} for p in (2.0, 4.0) for f in range(5)})
    assert all(a["verdict"] == "undecided" for a in answer_of(trials_of(both))["arms"])


def test_a_cell_run_twice_counts_its_first_complete_run_and_names_the_other():
    p4 = [2.70, 2.725, 2.69, 2.71, 2.702]  # 0.1 below REF, give or take: differences that vary
    cells = grid({2.0: REF, 4.0: p4})
    cells.append({"p": 4.0, "fold": 2, "value": 9.0, "number": 50})  # the same cell again, later, far off
    answer = answer_of(trials_of(cells))
    (arm,) = answer["arms"]
    assert arm["mean"] == pytest.approx(np.mean(p4))
    assert arm["verdict"] == "better" and arm["runs_in"] == 5
    assert answer["duplicates"] == [{"value": 4.0, "fold": 2, "counted": 7, "left_out": [50]}]
    assert "p = 4 fold 2 counts trial 7, leaves out trial 50" in answer["sentence"]


def test_a_pruned_run_in_a_replicate_counts_as_failed_not_as_a_run_to_come():
    cells = grid({2.0: REF, 4.0: [2.70, 2.725, None, 2.71, 2.702]}, {(4.0, 2): {"state": "PRUNED"}})
    answer = answer_of(trials_of(cells))
    (arm,) = answer["arms"]
    assert not answer["interim"] and arm["failed_runs"] == 1 and arm["verdict"] == "undecided"
    assert arm["barred_by_failures"] and answer["pruned"] == [{"value": 4.0, "runs": 1}]
    assert "p = 4 was pruned on 1 run (counted as failed" in answer["sentence"]


def test_an_interim_reading_gives_each_arms_own_count_of_runs_in():
    cells = grid({2.0: REF, 1.0: [2.90, 2.91, 2.88, 2.92, None]}, {(1.0, 4): {"state": "RUNNING"}})
    answer = answer_of(trials_of(cells))
    assert answer["interim"]
    assert "Interim reading, 4 to 5 of the 5 runs per arm (p = 2: 5, p = 1: 4) in" in answer["sentence"]


def test_an_interim_reading_counts_the_runs_of_a_reference_that_diverged():
    cells = grid({2.0: [float("nan")] * 5, 1.0: [2.90, 2.91, 2.88, 2.92, None]},
                 {**{(2.0, f): {"diverged": True} for f in range(5)}, (1.0, 4): {"state": "RUNNING"}})
    answer = answer_of(trials_of(cells))
    assert answer["interim"] and answer["reference"]["runs_in"] == 5
    assert "4 to 5 of the 5 runs per arm (p = 2: 5, p = 1: 4) in" in answer["sentence"]


def _agrees(row, margin: float) -> None:
    """The printed interval carries the verdict: beyond the ROPE exactly where better or worse, inside
    it exactly where equivalent."""
    low, high = row.low, row.high
    assert (row.verdict == "better") == (high < -margin), row
    assert (row.verdict == "worse") == (low > margin), row
    assert (row.verdict == "equivalent") == (-margin < low and high < margin), row


@pytest.mark.parametrize("k", [2, 3, 5])
def test_the_printed_interval_is_the_one_the_verdict_was_decided_on(k):
    from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts
    from lpstudy.results.answers.options import AnswerOptions

    rng = np.random.default_rng(k)
    decided = 0
    for study in range(150):
        ref = 2.8 + rng.normal(0, 0.02, k)
        effects = rng.choice([-0.04, -0.015, 0.0, 0.015, 0.04], size=3)
        rows = {"ref": ref, **{f"a{i}": ref + e + rng.normal(0, 0.01, k) for i, e in enumerate(effects)}}
        table = pd.DataFrame(rows).T
        for row in endpoint_verdicts(table, "ref", k=k, margin=MARGIN, options=AnswerOptions()):
            _agrees(row, MARGIN)
            assert 0.9 - 1e-9 <= row.confidence <= 1 - 0.05 / 3 + 1e-9  # between 1 − 2·alpha and 1 − alpha/m
            decided += row.verdict != "undecided"
    assert decided >= 10  # the planted effects decide arms: the check saw decided and undecided ones


def test_an_interval_beyond_the_rope_at_95_percent_but_not_at_holms_level_prints_holms():
    """The issue's case (p = 4 wholly beyond the ROPE, "undecided", nothing said): three arms, p = 4's
    95 % interval lies beyond the ROPE while Holm's test at alpha/3 (its step) does not reject; it is
    undecided, and the interval printed is the one at Holm's level, which reaches into the ROPE."""
    from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts
    from lpstudy.results.answers.fold_tests import corrected_stats, interval
    from lpstudy.results.answers.options import AnswerOptions

    ref, wobble = np.array([2.80, 2.82, 2.79, 2.81, 2.80]), np.array([-1, 1, -0.5, 0.5, 0]) * 0.0113
    table = pd.DataFrame({"ref": ref, "p4": ref + 0.03 + wobble, "p1": ref + wobble, "p3": ref - wobble}).T
    row = next(r for r in endpoint_verdicts(table, "ref", k=5, margin=MARGIN, options=AnswerOptions())
               if r.value == "p4")
    mean, se, df = corrected_stats(0.03 + wobble, 5)
    assert interval(mean, se, df, 0.95)[0] > MARGIN  # the 95 % interval lies beyond the ROPE
    assert row.verdict == "undecided" and row.confidence == pytest.approx(1 - 0.05 / 3)
    assert row.low <= MARGIN < row.high  # the printed one does not: it is the verdict's


def test_final_loss_differences_that_do_not_vary_decide_nothing():
    """Differences the same on every fold have a zero standard error: the t would call p = 4 "better"
    and p = 3 "equivalent" with a zero-width interval and a p-value of 0, decided by no spread at all.
    The engine leaves both undecided and says why, in the table and the sentence, and plans no runs
    for them (more runs of a difference that never varies decide nothing)."""
    from lpstudy.results.answers.answer_types import VerdictAnswer
    from lpstudy.results.tables.verdicts import verdict_frame

    cells = grid({2.0: REF, 4.0: [v - 0.1 for v in REF], 3.0: [v + 1e-4 for v in REF],
                  1.0: [v + 0.3 + 0.01 * (i % 2) for i, v in enumerate(REF)]})
    answer = answer_of(trials_of(cells))
    arms = {a["p"]: a for a in answer["arms"]}
    for p in (4.0, 3.0):
        assert arms[p]["verdict"] == "undecided" and arms[p]["region"] == "undecided"
        assert "do not vary" in arms[p]["unresolved"]
        assert arms[p]["folds_to_decide"] is None and arms[p]["holds_up_to_rho"] is None
    assert arms[1.0]["verdict"] == "worse" and "unresolved" not in arms[1.0]  # a spread, however small, decides
    assert "p = 4: the paired differences do not vary" in answer["sentence"]
    assert not answer.get("to_decide")
    table = verdict_frame(VerdictAnswer.of(answer)).set_index("arm")
    assert "do not vary" in table.loc["p = 4", "runs to decide"]
