"""What a search can say about p, on planted searches whose truth is known: p's surrogate profile
with the learning rate held apart (lpstudy.results.answers.search), the parameter importance (type II
shares, intervals, a null, a minimum), and the expected best of m runs per p group."""

from __future__ import annotations

import json
import os
import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.results import analysis as A
from lpstudy.results.analysis.best_of_m import expected_best_of_m
from lpstudy.results.answers import study_answer
from lpstudy.results.answers.search import search_answer as _search_answer
from tests.search_planted import SPACE, lr_only, p_curve, p_effect, p_shape, search_trials, study


def search_answer(data) -> dict:
    """The search's answer as `lpstudy verdict --json` writes it (the engine's parts typed, then plain)."""
    return _search_answer(data).to_json()


SEARCH_KEYS = {"study", "kind", "metric", "sentence", "importance", "p_profile", "p_partial_dependence",
               "entanglement", "separable", "suggest"}


# --- p's effect with the learning rate held apart --------------------------------------------------

def test_a_search_where_only_lr_matters_and_p_follows_lr_cannot_separate_p_though_the_raw_means_differ():
    trials = lr_only()
    raw = A.per_p_summary(trials, 4).set_index("p_bin")
    low_p, middle = raw.iloc[0], raw.iloc[1]
    assert low_p["ci_low"] > middle["ci_high"]  # the naive mean per p shows an "effect of p": lr's

    answer = search_answer(study(trials))
    assert answer["entanglement"]["lr"] > 0.8
    assert answer["separable"] is False
    for row in answer["effect"]["differences"]:  # p's adjusted effect: every band holds 0
        assert row["low"] <= 0 <= row["high"], row
    # p tied to lr (rank correlation above TANGLED): no surrogate can tell which acts, and the sentence says so
    assert answer["sentence"].startswith("This search cannot separate p from the learning rate: p's rank "
                                         "correlation with it among the configurations is +0.97"), answer["sentence"]
    assert answer["suggest"].startswith("lpstudy replicate --study planted-p --preset smoke --p 1,2,3,4 --lr ")
    assert "--gain-init " in answer["suggest"] and answer["suggest"].endswith("--folds 5")


def test_a_planted_effect_of_p_is_recovered_by_the_profile_within_its_band():
    effect = 0.2  # the loss falls by 0.2 from p = 1 to p = 4, lr's bowl beside it
    answer = search_answer(study(p_effect(effect=effect)))
    assert answer["separable"] is True
    assert "this search separates p's effect" in answer["sentence"], answer["sentence"]
    profile = pd.DataFrame(answer["p_profile"])
    truth = 2.0 - effect * (profile["p"] - 1) / 3  # lr at its best (1e-3) adds nothing
    inside = (profile["low"] - 0.01 <= truth) & (truth <= profile["high"] + 0.01)
    assert inside.all(), profile.assign(truth=truth)
    diffs = pd.DataFrame(answer["effect"]["differences"]).set_index("p")
    at_top = diffs.iloc[-1]
    planted = -effect * (diffs.index[-1] - 2.0) / 3
    assert at_top["low"] <= planted <= at_top["high"], (at_top, planted)


def test_the_band_covers_a_small_planted_effect_of_p_that_the_fitted_scale_alone_would_miss():
    """p moves the tuned loss by 1.5 ROPE at p = 1 and p = 4 (0.015 at a loss of 2, curved, noise
    0.02 per run): the band holds the whole true profile in at least 5 of 6 planted searches (the
    band drawn at the fitted hyperparameters alone held it in 2 of these 6)."""
    covered = []
    for seed in range(6):
        profile = pd.DataFrame(search_answer(study(p_curve(seed=seed, ends=0.015)))["p_profile"])
        truth = 2.0 + 0.015 * p_shape(profile["p"].astype("float64"))
        covered.append(bool(((profile["low"] <= truth) & (truth <= profile["high"])).all()))
    assert sum(covered) >= 5, covered


def test_no_effect_is_never_said_while_p_s_length_scale_sits_at_its_bound():
    """No effect of p, quiet runs: the fit reads p as doing nothing (its length scale along p at the
    bound of its range) and the band it draws is narrow, but that is the fit's assumption, not the
    runs' evidence: the sentence says the search cannot yet tell p's effect from none."""
    for seed in (0, 1):
        answer = search_answer(study(p_curve(seed=seed, ends=0.0, noise=0.005)))
        assert "finds no effect" not in answer["sentence"], answer["sentence"]
        assert answer["effect"]["p_scale_at_bound"] is True
        assert answer["sentence"].startswith("This search cannot yet tell p's effect from none"), answer["sentence"]


def test_the_sentence_cites_only_a_p_whose_band_excludes_zero(monkeypatch):
    """A planted surrogate posterior (its draws of the profile): p = 4 lies lowest but its band is
    wide (an edge of the space, few runs), p = 3 lies below p = 2 with a narrow band, p = 1 above with
    a wide one. The sentence cites p = 3, the one p separated from the reference."""
    import re

    from lpstudy.results.answers import search
    from lpstudy.results.answers.surrogate import Profile, simultaneous

    grid = np.array([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0])
    centre = np.array([0.01, 0.0, 0.0, -0.005, -0.02, -0.03, -0.05])
    spread = np.array([0.02, 0.002, 0.002, 0.002, 0.002, 0.02, 0.08])
    draws = 2.0 + centre + np.random.default_rng(0).standard_normal((400, len(grid))) * spread
    mean, low, high = simultaneous(draws)
    planted = Profile(p=grid, profile=mean, low=low, high=high, dependence=mean, dep_low=low, dep_high=high,
                      draws=draws, n_fit=120, n_runs=120, best_setting={"p": 3.0, "lr": 1e-3, "gain_init": 16.0})
    monkeypatch.setattr(search, "p_profile", lambda losses, searched: planted)
    answer = search_answer(study(p_effect()))
    cited = float(re.search(r"p = ([0-9.]+) reaches", answer["sentence"]).group(1))
    row = next(r for r in answer["effect"]["differences"] if abs(r["p"] - cited) < 1e-9)
    assert row["low"] > 0 or row["high"] < 0, (answer["sentence"], row)
    assert cited == 3.0, answer["sentence"]


def test_eight_runs_say_what_they_can_tell_and_draw_no_importance():
    rng = np.random.default_rng(3)
    quarters = np.repeat([1.3, 2.1, 2.9, 3.7], 2) + rng.uniform(-0.3, 0.3, 8)  # two in each quarter
    log_lr = rng.uniform(-4, -2, 8)
    loss = 2.5 - 0.4 * (log_lr + 4) + rng.normal(0, 0.01, 8)  # lower at higher lr: lr's doing alone
    answer = search_answer(study(search_trials(quarters, 10 ** log_lr, np.full(8, 16.0), loss)))
    assert answer["importance"]["shares"] == {}
    assert answer["importance"]["reason"].startswith("8 completed runs: importance needs at least 30")
    assert answer["p_profile"] == [] and answer["separable"] is False
    sentence = answer["sentence"]
    assert sentence.startswith("8 completed runs at finite p: too few to hold p's effect apart"), sentence
    assert "follows the learning rate more than p" in sentence, sentence
    assert answer["suggest"].startswith("lpstudy replicate")


def test_the_answer_has_the_agreed_shape_and_is_plain_json():
    answer = study_answer(study(p_effect(n=40))).to_json()
    assert SEARCH_KEYS <= set(answer), set(answer)
    assert answer["kind"] == "search"
    assert set(answer["importance"]) >= {"shares", "low", "high", "null", "reason"}
    assert set(answer["p_profile"][0]) == {"p", "loss", "low", "high"}
    json.dumps(answer, allow_nan=False)


def test_infinity_gets_its_own_profile_point_never_a_number_on_the_axis():
    rng = np.random.default_rng(5)
    n = 90
    p = np.where(rng.uniform(0, 1, n) < 0.25, math.inf, rng.uniform(1, 4, n))
    log_lr = rng.uniform(-4, -2, n)
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 + np.where(np.isinf(p), 0.1, 0.0) + rng.normal(0, 0.01, n)
    answer = search_answer(study(search_trials(p, 10 ** log_lr, np.full(n, 16.0), loss)))
    last = answer["p_profile"][-1]
    assert last["p"] == "inf"
    assert last["low"] <= 2.1 <= last["high"] + 0.01, last  # ∞'s planted 0.1 above every finite p


# --- importance ------------------------------------------------------------------------------------

def test_importance_ranks_a_searched_string_choice_read_from_the_trials_parameters():
    rng = np.random.default_rng(7)
    n = 80
    per = rng.choice(["layer", "head"], n)
    trials = search_trials(rng.uniform(1, 4, n), 10 ** rng.uniform(-4, -2, n), np.full(n, 16.0),
                           2.0 + np.where(per == "head", 0.2, 0.0) + rng.normal(0, 0.02, n), extra={"gain_per": per})
    space = {**SPACE, "gain_per": {"type": "choice", "choices": ["layer", "head"]}}
    found = A.param_importance(trials, study(trials, space).info.spec)
    assert found.shares.index[0] == "gain_per", found.shares
    assert found.low["gain_per"] > found.null


def test_where_infinity_stands_on_the_axis_does_not_change_p_s_importance(monkeypatch):
    from lpstudy.results.analysis import groups

    rng = np.random.default_rng(11)
    n = 80
    p = np.where(rng.uniform(0, 1, n) < 0.2, math.inf, rng.uniform(1, 4, n))
    loss = 2.0 + 0.05 * np.where(np.isinf(p), 3.0, p) + rng.normal(0, 0.02, n)
    trials = search_trials(p, 10 ** rng.uniform(-4, -2, n), np.full(n, 16.0), loss)
    shares = []
    for where in (4.5, 10.0):
        monkeypatch.setattr(groups, "inf_position", lambda values, where=where: where)
        shares.append(A.param_importance(trials, study(trials).info.spec).shares["p"])
    assert shares[0] == shares[1]


def test_importance_holds_a_sampled_companion_apart_on_an_unbalanced_search():
    """No effect of p at all, p tied to lr in the sample: the type II share of p is noise (below
    the shuffled losses' line), lr's is not; and the shares are statsmodels' type II sums of squares."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    trials = lr_only(n=150, seed=2)
    found = A.param_importance(trials, study(trials).info.spec)
    assert found.shares["p"] < found.null < found.shares["lr"], found

    from lpstudy.results.analysis.searched import groups_of, read_searched
    searched = read_searched(trials, study(trials).info.spec)
    frame = pd.DataFrame({name: groups_of(searched.get(name), 4) for name in ("p", "lr", "gain_init")})
    frame["loss"] = trials["value"]
    table = anova_lm(smf.ols("loss ~ C(p) + C(lr) + C(gain_init)", frame).fit(), typ=2)
    total = float(((frame["loss"] - frame["loss"].mean()) ** 2).sum())
    for name in ("p", "lr", "gain_init"):
        assert found.shares[name] == pytest.approx(table.loc[f"C({name})", "sum_sq"] / total, rel=1e-6)


# --- the expected best of m ------------------------------------------------------------------------

def test_the_expected_best_of_m_runs_matches_a_hand_computation():
    # losses 1, 2, 3, m = 2 draws with replacement: P(min = 1) = 1 − (2/3)² = 5/9,
    # P(min = 2) = (2/3)² − (1/3)² = 3/9, P(min = 3) = (1/3)² = 1/9
    assert expected_best_of_m([3.0, 1.0, 2.0], 2) == pytest.approx((5 * 1 + 3 * 2 + 1 * 3) / 9)
    assert expected_best_of_m([3.0, 1.0, 2.0], 1) == pytest.approx(2.0)  # one run: the mean
    assert expected_best_of_m([5.0], 4) == pytest.approx(5.0)


def test_the_tuned_profile_compares_p_groups_at_the_same_number_of_runs():
    rows = [(1.2, 1.0), (1.4, 2.0), (1.6, 3.0), (1.8, 4.0), (3.2, 2.5), (3.6, 3.5)]
    trials = search_trials([p for p, _ in rows], np.full(6, 1e-3), np.full(6, 16.0), [v for _, v in rows])
    profile = A.tuned_profile(trials, bins=[1.0, 2.5, 4.0]).set_index("p_bin")
    crowded, sparse = profile.loc["1–2.5"], profile.loc["2.5–4"]
    assert crowded["m"] == sparse["m"] == 2  # the smaller group's runs
    assert crowded["best"] == 1.0  # a best of 4
    # 1, 2, 3, 4 and two draws: P(min = 1) = 1 − (3/4)² = 7/16, P(2) = 5/16, P(3) = 3/16, P(4) = 1/16
    assert crowded["expected_best"] == pytest.approx((7 * 1 + 5 * 2 + 3 * 3 + 1 * 4) / 16)
    assert sparse["expected_best"] == pytest.approx(2.5 * 3 / 4 + 3.5 / 4)
    assert crowded["top_mean"] == pytest.approx(2.0) and math.isnan(sparse["top_mean"])  # not under 3 runs
    assert not math.isnan(crowded["expected_low"]) and math.isnan(sparse["expected_low"])


# --- the command line ----------------------------------------------------------------------------

@pytest.mark.slow
def test_lpstudy_verdict_json_gives_a_searchs_profile_importance_and_sentence(tmp_path):
    """`lpstudy verdict --study NAME --json` on a 120-trial synthetic search prints the search's answer:
    p_profile rows with bands, the importance with its reason, the entanglement and the sentence;
    without --json, the same sentence and the profile as a table."""
    import subprocess
    import sys

    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{tmp_path / 's.db'}"
    write_synthetic_study(url, "search", n_trials=120, n_evals=4, seed=2)
    done = subprocess.run([sys.executable, "-m", "lpstudy", "verdict", "--study", "search", "--storage", url, "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert SEARCH_KEYS <= set(answer) and answer["kind"] == "search"
    assert all(set(row) == {"p", "loss", "low", "high"} for row in answer["p_profile"])
    assert answer["importance"]["shares"] and answer["importance"]["reason"] == ""
    assert answer["sentence"].startswith(("With the learning rate", "This search cannot yet separate",
                                          "This search cannot yet tell"))
    shown = subprocess.run([sys.executable, "-m", "lpstudy", "verdict", "--study", "search", "--storage", url],
                           capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert answer["sentence"][:40] in " ".join(shown.stdout.split())
    assert "p's profile" in shown.stdout and "importance (type II share" in shown.stdout
    from lpstudy.values import format_p

    rows = [line.split() for line in shown.stdout.splitlines() if line.split()[:1] and (line.split()[0][0].isdigit() or line.split()[0] == "∞")]
    shown_p = [row[0] for row in rows[:len(answer["p_profile"])]]
    assert shown_p == [format_p(float(row["p"])) for row in answer["p_profile"]]  # p as people read it: '1.25', not 17 digits
    assert all(len(p) <= 4 for p in shown_p), shown_p
