"""The verdicts (lpstudy.results.answers): planted fold losses whose truth is known, many simulated
studies at once, the rate of wrong answers counted; baycomp's Bayesian correlated t-test and
statsmodels' Holm as the oracles of the numbers; the verdict of a study written as a worker writes it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.answers.fold_tests import (VERDICTS, corrected_stats, difference_p, equivalence_p, fold_verdicts,
                                                holm, interval)
from lpstudy.results.answers.sequential import (SequentialTests, look_levels, planted_differences, rounds_of,
                                                sequential_verdicts)

N_STUDIES = 4000
MC = 3 * math.sqrt(0.05 * 0.95 / N_STUDIES)  # three Monte Carlo standard errors at a 5 % rate
BETTER, EQUIVALENT, WORSE, UNDECIDED = (VERDICTS.index(v) for v in ("better", "equivalent", "worse", "undecided"))
ROPE = 2.0  # the margin, in units of the differences' standard deviation, every simulation below uses
NARROW = 0.1  # a ROPE too narrow to call anything equivalent: the difference test alone decides


def simulate(k: int, effects, n_studies: int, margin: float, seed: int) -> SequentialTests:
    """Planted fold differences of n_studies studies (ρ = 1/K), replayed through the stages' verdicts."""
    return sequential_verdicts(planted_differences(k, effects, n_studies, 1.0, seed), k, margin, 0.05, rounds_of(k))


def wrong(verdicts) -> np.ndarray:
    return np.isin(verdicts, [BETTER, WORSE])


@pytest.mark.parametrize("k", [3, 5, 10])
def test_no_effect_gives_a_false_better_or_worse_at_most_5_percent_where_the_plain_paired_t_test_gives_more(k):
    diffs = planted_differences(k, [0.0], N_STUDIES, seed=k)  # ρ = 1/K between folds, as shared training makes it
    assert wrong(fold_verdicts(diffs, k, ROPE).verdict).mean() <= 0.05 + MC
    assert wrong(fold_verdicts(diffs, k, NARROW).verdict).mean() <= 0.05 + MC
    # the corrected test alone (no equivalence first) is calibrated: about 5 %, not far below
    raw = difference_p(*corrected_stats(diffs, k)) < 0.05
    assert abs(raw.mean() - 0.05) <= MC
    # the plain paired t-test (variance / n: the correction at ρ = 0), on the same studies, says "different" far more often
    assert (difference_p(*corrected_stats(diffs, k, rho=0.0)) < 0.05).mean() > 0.05 + 2 * MC


@pytest.mark.parametrize("k", [3, 5, 10])
def test_three_arms_without_effect_keep_the_family_wise_error_at_5_percent(k):
    diffs = planted_differences(k, [0.0, 0.0, 0.0], N_STUDIES, seed=100 + k)
    for margin in (ROPE, NARROW):
        verdicts = fold_verdicts(diffs, k, margin).verdict
        assert wrong(verdicts).any(axis=-1).mean() <= 0.05 + MC
    # without Holm the three tests at 5 % each would exceed it
    raw = difference_p(*corrected_stats(diffs, k)) < 0.05
    assert raw.any(axis=-1).mean() > 0.05 + MC


def test_no_effect_at_ten_folds_is_called_equivalent_within_a_rope_of_two_standard_deviations():
    verdicts = fold_verdicts(planted_differences(10, [0.0], N_STUDIES, seed=7), 10, ROPE).verdict
    assert (verdicts == EQUIVALENT).mean() >= 0.80


@pytest.mark.parametrize("effect, verdict", [(2 * ROPE, WORSE), (-2 * ROPE, BETTER)])
def test_an_effect_of_two_ropes_at_ten_folds_is_called_better_or_worse_by_its_sign(effect, verdict):
    verdicts = fold_verdicts(planted_differences(10, [effect], N_STUDIES, seed=8), 10, ROPE).verdict
    assert (verdicts == verdict).mean() >= 0.80


def test_the_interval_and_the_equivalence_test_are_baycomps_correlated_t_test():
    """baycomp.CorrelatedTTest (Corani & Benavoli 2015) with the differences of all K folds: its
    posterior is Student's t with the Nadeau–Bengio variance; its 95 % credible interval is our
    interval, and its P(left of the ROPE), P(right of it) our two one-sided p-values."""
    from baycomp import CorrelatedTTest
    from scipy import stats

    rng = np.random.default_rng(3)
    for k in (3, 5, 10):
        ref, arm = rng.normal(2.8, 0.05, k), rng.normal(2.79, 0.05, k)
        mean, se, df = corrected_stats(arm - ref, k)
        posterior = CorrelatedTTest(ref, arm, rope=0.01)  # baycomp's difference: second − first
        assert math.isclose(float(mean), posterior.mean) and math.isclose(float(se) ** 2, posterior.var)
        assert df == posterior.df
        low, high = interval(mean, se, df, 0.95)
        b_low, b_high = stats.t.interval(0.95, posterior.df, posterior.mean, math.sqrt(posterior.var))
        assert math.isclose(float(low), b_low) and math.isclose(float(high), b_high)
        p_left, _, p_right = posterior.probs()
        assert math.isclose(float(equivalence_p(mean, se, df, 0.01)), max(p_left, p_right))


def test_holm_is_statsmodels_on_every_row_and_leaves_missing_p_values_out():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    p = rng.random((12, 4)) ** 3  # statsmodels takes ~0.1 s a call: twelve rows, two with a missing p-value
    p[::7, 1] = np.nan
    reject, adjusted = holm(p, 0.05)
    for row in range(len(p)):
        present = ~np.isnan(p[row])
        expected_reject, expected, _, _ = multipletests(p[row, present], alpha=0.05, method="holm")
        assert np.allclose(adjusted[row, present], expected) and (reject[row, present] == expected_reject).all()
        assert not reject[row, ~present].any()


def test_the_sequential_looks_keep_the_error_rate_and_stop_early_for_large_or_no_effects():
    k = 10
    assert rounds_of(k) == [3, 5, 8, 10] and rounds_of(6) == [3, 5, 6] and rounds_of(20) == [3, 5, 8, 10, 20]
    assert math.isclose(sum(look_levels(rounds_of(k), k, 0.05)), 0.05)
    null = simulate(k, [0.0, 0.0, 0.0], N_STUDIES, margin=ROPE, seed=1)
    assert wrong(null.verdict).any(axis=-1).mean() <= 0.05 + MC
    assert wrong(simulate(k, [0.0, 0.0, 0.0], N_STUDIES, margin=NARROW, seed=1).verdict).any(axis=-1).mean() <= 0.05 + MC
    assert null.folds_used.mean() < k  # equivalence decided before the 10th fold, most of the time
    large = simulate(k, [3 * ROPE], N_STUDIES, margin=ROPE, seed=2)
    assert (large.verdict == WORSE).mean() >= 0.95 and large.folds_used.mean() <= 6


# --- the answer of a study, from its trials frame ------------------------------------------------

def planted_trials(losses: dict[float, list[float]], diverged: dict[tuple, bool] | None = None) -> pd.DataFrame:
    rows, number = [], 0
    for p, values in losses.items():
        for fold, loss in enumerate(values):
            rows.append({"number": number, "trial_id": number + 1, "state": "COMPLETE", "value": loss, "p": p,
                         "fold": fold, "folds": len(values), "diverged": (diverged or {}).get((p, fold), False),
                         "final_val_loss": loss})
            number += 1
    return pd.DataFrame(rows)


def answer_of(trials: pd.DataFrame, curves: pd.DataFrame | None = None, **options):
    from lpstudy.results.answers import AnswerOptions, study_answer
    from lpstudy.results.reading.frames import StudyData, StudyInfo

    data = StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=trials,
                     curves=pd.DataFrame() if curves is None else curves)
    return study_answer(data, AnswerOptions(**options)).to_json()  # as `lpstudy verdict --json` gives it


def test_a_planted_replicate_gets_one_verdict_per_p_in_the_agreed_shape():
    rng = np.random.default_rng(5)
    fold_effect = rng.normal(0, 0.02, 10)  # what a fold does to every p alike
    noise = lambda: rng.normal(0, 0.001, 10)  # noqa: E731
    trials = planted_trials({2.0: list(2.8 + fold_effect + noise()), 1.0: list(2.9 + fold_effect + noise()),
                             3.0: list(2.7 + fold_effect + noise()), 4.0: list(2.8 + fold_effect + noise())})
    answer = answer_of(trials)
    verdicts = {arm["p"]: arm["verdict"] for arm in answer["arms"]}
    assert verdicts == {1.0: "worse", 3.0: "better", 4.0: "equivalent"}
    assert answer["reference"]["p"] == 2.0 and answer["rope"]["absolute"] == 0.01 and answer["rope"]["set"] == "nats"
    assert answer["rope"]["relative"] == pytest.approx(0.01 / 2.8, rel=0.01)
    for arm in answer["arms"]:
        assert arm["low"] <= arm["diff"] <= arm["high"] and arm["n_folds"] == 10
        assert {"p_value_difference", "p_value_equivalence", "folds_to_decide"} <= set(arm)
    assert "the ROPE ±0.01 nats" in answer["sentence"] and "p = 4 is equivalent to p = 2" in answer["sentence"]
    assert "p = 1 is worse than p = 2 beyond the ROPE" in answer["sentence"]
    importance = answer["importance"]
    assert importance["shares"]["p"] > importance["null"] and importance["p_value"] < 0.01
    assert "the only field this study varies" in importance["reason"]


def test_three_folds_with_spread_are_undecided_and_say_how_many_folds_would_decide():
    trials = planted_trials({2.0: [2.80, 2.86, 2.75], 1.0: [2.77, 2.80, 2.74]})
    (arm,) = answer_of(trials)["arms"]
    assert arm["verdict"] == "undecided" and arm["folds_to_decide"] > 3 and arm["decided_by"] == "beyond the ROPE"


def test_a_diverged_fold_leaves_the_pairs_and_counts_in_the_divergence_rate():
    losses = {2.0: [2.80, 2.81, 2.79, 2.80], 4.0: [2.70, 2.71, 2.69, 2.70]}
    answer = answer_of(planted_trials(losses, diverged={(4.0, 3): True, (4.0, 2): True}))
    (arm,) = answer["arms"]
    assert arm["n_folds"] == 2
    rates = {row["value"]: row["rate"] for row in answer["stability"]["divergence"]}
    assert rates == {2.0: 0.0, 4.0: 0.5}


def test_a_reference_that_is_no_arm_is_refused_in_one_line():
    from lpstudy.errors import UserError

    with pytest.raises(UserError, match=r"the reference p = 7 is not one of the study's arms \(p = 2, p = 1\)"):
        answer_of(planted_trials({2.0: [2.8, 2.9], 1.0: [2.7, 2.8]}), reference=7.0)


def test_the_importance_anova_is_statsmodels_type_ii_and_noise_alone_is_measured():
    from lpstudy.results.answers.fold_importance import _sums_of_squares, anova_table, fold_importance

    rng = np.random.default_rng(2)
    table = pd.DataFrame(rng.normal(2.8, 0.05, (4, 3)), index=[1.0, 2.0, 3.0, 4.0], columns=[0, 1, 2])
    anova = anova_table(table)
    ss_arm, ss_err = _sums_of_squares(table.to_numpy())
    assert math.isclose(anova.loc["C(arm)", "sum_sq"], ss_arm) and math.isclose(anova.loc["Residual", "sum_sq"], ss_err)
    # no effect planted: noise alone's η² with 4 arms × 3 folds is about a half once the folds' correlation
    # (ρ = 1/K) is counted (an arm's mean varies 2.5 times more than independent residuals say)
    null = fold_importance(table, "p")
    assert null.p_value > 0.05 and 0.4 < null.eta_squared_null < 0.65
    assert null.shares["p"] < 1.0  # a measured share, never the 1.00 of a single field ranked alone


def test_logit_growth_and_smallest_entropy_are_compared_with_the_reference_fold_by_fold():
    """Planted curves: p = 4's largest logit grows by 3 over training where p = 2's grows by 1, and its
    smallest head entropy falls to 1.0 where p = 2's stays at 2.0 (a little noise per fold)."""
    rng = np.random.default_rng(4)
    trials = planted_trials({2.0: [2.80, 2.81, 2.79, 2.80, 2.82], 4.0: [2.78, 2.80, 2.77, 2.79, 2.80]})
    rows = []
    for _, t in trials.iterrows():
        growth, floor = (3.0, 1.0) if t["p"] == 4.0 else (1.0, 2.0)
        for step, share in ((0, 0.0), (10, 0.5), (20, 1.0)):
            rows.append({"trial_id": t["trial_id"], "step": step, "max_logit": 5.0 + share * growth + rng.normal(0, 0.05),
                         "min_head_entropy": 2.5 - share * (2.5 - floor) + rng.normal(0, 0.02)})
    stability = answer_of(trials, pd.DataFrame(rows))["stability"]
    (growth,) = [r for r in stability["logit_growth"] if "diff" in r]
    (entropy,) = [r for r in stability["min_entropy"] if "diff" in r]
    assert growth["value"] == 4.0 and growth["low"] < 2.0 < growth["high"] and growth["low"] > 0 and growth["p_value"] < 0.05
    assert entropy["low"] < -1.0 < entropy["high"] and entropy["high"] < 0 and entropy["p_value"] < 0.05
