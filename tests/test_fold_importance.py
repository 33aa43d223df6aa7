"""The importance of the compared field within folds (answers.fold_importance): its test holds its
error rate when the folds correlate as K-fold CV makes them, its ω² is unclipped and its interval
covers the truth over 3–10 folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import f as f_dist

from lpstudy.results.answers.fold_importance import (corrected_f, fold_importance, noncentrality_interval,
                                                     omega_squared)

N_STUDIES = 4000
MC = 1.96 * np.sqrt(0.05 * 0.95 / N_STUDIES)  # the Monte Carlo half-width of a 5 % rate


def planted(rng, studies: int, arms: int, k: int, rho: float, effects=None) -> np.ndarray:
    """Loss tables (studies, arms, folds) with no effect (or `effects` per arm): a fold block, and
    each arm's residuals correlated across folds at rho (an arm-level part of variance rho), so two
    arms' fold differences correlate at rho, the verdicts' model at rho = 1/K."""
    fold = rng.normal(0, 0.05, (studies, 1, k))
    arm = rng.normal(0, np.sqrt(rho) * 0.02, (studies, arms, 1))
    noise = rng.normal(0, np.sqrt(1 - rho) * 0.02, (studies, arms, k))
    shift = np.zeros((1, arms, 1)) if effects is None else np.asarray(effects, dtype="float64")[None, :, None]
    return 2.8 + fold + arm + noise + shift


@pytest.mark.parametrize("arms,k", [(2, 3), (4, 5), (7, 10)])
def test_no_effect_gives_a_p_value_below_5_percent_in_about_5_percent_of_studies(arms, k):
    rng = np.random.default_rng(arms * 100 + k)
    tables = planted(rng, N_STUDIES, arms, k, rho=1 / k)
    p = f_dist.sf(corrected_f(tables, k), arms - 1, (arms - 1) * (k - 1))
    assert abs(np.mean(p < 0.05) - 0.05) < MC + 0.005
    # the answer's own p-value is that test's
    for table in tables[:3]:
        answer = fold_importance(pd.DataFrame(table), "p", k=k)
        assert answer.p_value == pytest.approx(f_dist.sf(corrected_f(table, k), arms - 1, (arms - 1) * (k - 1)))


@pytest.mark.slow
def test_the_answers_importance_on_no_effect_replicates_is_significant_in_about_5_percent():
    """Counted through fold_importance itself, over many planted studies (4 arms, 5 folds, rho = 1/5)."""
    rng = np.random.default_rng(7)
    n = 1000
    tables = planted(rng, n, 4, 5, rho=0.2)
    rate = np.mean([fold_importance(pd.DataFrame(t), "p", k=5).p_value < 0.05 for t in tables])
    assert abs(rate - 0.05) < 1.96 * np.sqrt(0.05 * 0.95 / n) + 0.005


def test_omega_squared_is_unclipped_and_about_0_with_no_effect():
    rng = np.random.default_rng(3)
    tables = planted(rng, N_STUDIES, 4, 5, rho=0.2)
    omegas = omega_squared(corrected_f(tables, 5), 3, 20)
    assert (omegas < 0).mean() > 0.3  # below 0 where the arms differ less than noise makes them
    assert abs(np.median(omegas)) < 0.05
    answer = fold_importance(pd.DataFrame(tables[np.argmin(omegas)]), "p", k=5)
    assert answer.omega_squared < 0 and answer.low["p"] == 0.0 <= answer.high["p"]


def test_the_share_shown_lies_inside_its_own_interval_with_no_effect():
    """Issue 52: the unclipped ω² fell outside its interval in 77 of 200 no-effect studies; the
    share shown is the median-unbiased one, inside its interval in every one of 60 (by construction)."""
    rng = np.random.default_rng(11)
    inside = []
    for table in planted(rng, 60, 4, 5, rho=0.2):
        answer = fold_importance(pd.DataFrame(table), "p", k=5)
        inside.append(answer.low["p"] <= answer.shares["p"] <= answer.high["p"])
    assert all(inside)


@pytest.mark.parametrize("k,repeats", [(5, 3), (3, 2)])
def test_no_effect_with_repeats_is_significant_in_at_most_5_percent(k, repeats):
    """Repeated CV (each repeat's folds correlated at 1/K, repeats independent): the F corrected with
    K, not with the R·K blocks the table has, holds 5 % (a guard: at ρ = 1/K the R·K correction is close
    and holds too, 4.3 %; the issue's 16.5 % was at ρ = 0.5, outside the model)."""
    rng = np.random.default_rng(k * 10 + repeats)
    tables = np.concatenate([planted(rng, N_STUDIES, 3, k, rho=1 / k) for _ in range(repeats)], axis=-1)
    p = f_dist.sf(corrected_f(tables, k), 2, 2 * (repeats * k - 1))
    assert np.mean(p < 0.05) <= 0.05 + MC
    few = [fold_importance(pd.DataFrame(t), "p", k=k).p_value < 0.05 for t in tables[:150]]
    assert np.mean(few) <= 0.05 + 1.96 * np.sqrt(0.05 * 0.95 / 150)  # the answer's own F, the same test


@pytest.mark.parametrize("k", [3, 5, 10])
def test_the_noncentral_interval_covers_the_true_noncentrality_95_percent_of_the_time(k):
    from scipy.stats import ncf

    rng = np.random.default_rng(k)
    df1, df2, lam = 3, 3 * (k - 1), 6.0
    draws = ncf.rvs(df1, df2, lam, size=400, random_state=rng)
    covered = np.mean([low <= lam <= high for low, high in (noncentrality_interval(x, df1, df2) for x in draws)])
    assert abs(covered - 0.95) < 1.96 * np.sqrt(0.95 * 0.05 / 400) + 0.01


def test_a_real_effect_is_measured_and_a_non_finite_loss_is_said_not_raised():
    rng = np.random.default_rng(5)
    (table,) = planted(rng, 1, 4, 10, rho=0.1, effects=[0.0, 0.05, 0.1, 0.15])
    answer = fold_importance(pd.DataFrame(table), "p", k=10)
    assert answer.p_value < 0.01 and answer.low["p"] > answer.null > 0
    assert answer.low["p"] <= answer.shares["p"] <= answer.high["p"]
    table[1, 2] = np.inf
    out = fold_importance(pd.DataFrame(table), "p", k=10)
    assert out.shares == {} and "not finite" in out.reason
