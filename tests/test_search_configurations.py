"""One configuration, one observation: a search whose leaders are raced on more folds counts each
configuration once (its folds averaged with the fold as a factor) in its surrogate, its rank
correlations, its p groups and its convergence, and says how many configurations and runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.analysis.configurations import per_configuration
from lpstudy.results.answers.search import search_answer as _search_answer
from lpstudy.results.answers.search_convergence import GROUPS, search_convergence
from tests.search_planted import p_curve, study


def search_answer(data) -> dict:
    """The search's answer as `lpstudy verdict --json` writes it (the engine's parts typed, then plain)."""
    return _search_answer(data).to_json()


FOLD_SHIFT = np.array([0.0, 0.06, -0.03, 0.09])  # what each fold adds to every run's loss


def raced(trials: pd.DataFrame, leaders: int = 6, folds: int = 4, seed: int = 5) -> pd.DataFrame:
    """The search with its `leaders` lowest configurations run again on folds 1 … folds − 1: the same
    settings, the fold's shift and fresh noise (as intensify's races add them)."""
    rng = np.random.default_rng(seed)
    best = trials.nsmallest(leaders, "value")
    extra = []
    for fold in range(1, folds):
        again = best.copy()
        again["fold"] = float(fold)
        again["value"] = again["value"] + FOLD_SHIFT[fold] + rng.normal(0, 0.02, leaders)
        again["final_val_loss"] = again["value"]
        extra.append(again)
    out = pd.concat([trials, *extra], ignore_index=True)
    out["number"] = np.arange(len(out))
    return out


def test_each_configuration_is_read_on_the_average_fold():
    rows = [{"p": 1 + c / 4, "lr": 1e-3, "fold": f, "loss": 2 + c / 100 + FOLD_SHIFT[f]}
            for c in range(8) for f in ((0, 1, 2, 3) if c < 2 else (0,))]
    configs = per_configuration(pd.DataFrame(rows), ["p", "lr"])
    assert configs["runs"].tolist() == [4, 4, 1, 1, 1, 1, 1, 1] and configs["folds"].tolist()[:2] == [4, 4]
    # every configuration on the average fold: its planted value plus the mean fold shift, the raced and the single alike
    assert configs["loss"].to_numpy() == pytest.approx(2 + np.arange(8) / 100 + FOLD_SHIFT.mean(), abs=1e-12)


def test_the_answer_of_a_raced_search_counts_configurations_and_runs():
    # the band's width with and without the races: the test below and benchmarks/bench_search_band.py (one
    # 40-configuration search's ratio moves from 0.5 to 1.3 with the band's seed: a single search cannot say it)
    base = p_curve(n=40, seed=2)
    plain, with_races = search_answer(study(base)), search_answer(study(raced(base)))
    assert with_races["n_runs"] == 58 and with_races["n_configurations"] == 40
    assert with_races["effect"]["n_fit"] == 40 and with_races["effect"]["n_configurations"] == 40
    assert "40 configurations at finite p (58 runs" in with_races["sentence"], with_races["sentence"]
    # the rank correlations: one point per configuration, as without the races
    assert with_races["entanglement"] == plain["entanglement"]


def test_the_band_of_a_search_with_raced_leaders_is_as_wide_as_without_the_races():
    # a planted search with no effect of p (benchmarks/bench_search_band.py's 2001): with 16 unresampled
    # hyperparameter proposals its band was 0.028 wide unraced and 0.010 raced, the weight on one proposal
    from benchmarks.bench_search_band import planted

    trials, _ = planted("no effect", 2001)
    width = lambda a: np.mean([d["high"] - d["low"] for d in a["effect"]["differences"]])  # noqa: E731
    plain, with_races = width(search_answer(study(trials))), width(search_answer(study(raced(trials, seed=1))))
    assert 0.8 <= with_races / plain <= 1.25, (with_races, plain)


def test_the_bands_hyperparameter_draws_are_resampled_evenly_by_their_weights():
    from lpstudy.results.answers.surrogate import COMPONENTS, DRAWS, resampled

    weights = np.array([0.5, 0.25, 0.25, 0.0])
    counts = resampled(weights, np.random.default_rng(3))
    assert counts.sum() == DRAWS and counts[3] == 0 and np.count_nonzero(counts) <= COMPONENTS
    assert counts / DRAWS == pytest.approx(weights, abs=1 / COMPONENTS)


def curves_of(trials: pd.DataFrame, every: int = 25, steps: int = 300) -> pd.DataFrame:
    """A learning curve per run, falling to its final loss faster at higher p."""
    grid = np.arange(0, steps + 1, every)
    return pd.concat([pd.DataFrame({"trial_id": row.trial_id, "trial_number": row.number, "step": grid,
                                    "val_loss": row.value + 2.6 * np.exp(-grid / (40 + 20 * (4 - min(row.p, 4))))})
                      for row in trials.itertuples()], ignore_index=True)


def test_a_searchs_convergence_has_a_few_p_groups_each_configuration_counted_once():
    trials = raced(p_curve(n=40, seed=2))
    trials["trial_id"] = trials["number"] + 1
    trials["max_steps"] = 300
    data = study(trials)
    data.curves = curves_of(trials)
    convergence = search_convergence(data)
    assert convergence is not None and convergence.configurations == 40 and convergence.runs == 58
    assert sum(r.runs for r in convergence.restricted_mean) == 40
    assert len(convergence.restricted_mean) <= GROUPS + 1 and len(convergence.reach) <= GROUPS + 1
    assert convergence.resolution is not None and convergence.resolution.eval_interval == 25
    assert "40 configurations of 58 runs, each counted once" in convergence.sentence
    assert "no verdict on p here" in convergence.sentence
    for row in convergence.restricted_mean:
        assert row.low is not None and row.rmst is not None and row.high is not None
        assert 0 <= row.low <= row.rmst <= row.high <= 300


def test_separates_only_beyond_the_rope_and_infinity_is_profiled_over_the_same_settings_or_said_apart():
    """A 0.005-nat planted effect (half the ROPE): its band may exclude 0, never the ROPE, so no
    "separates". p = ∞ on a few settings of its own: said apart, never a profile point minimised over
    fewer settings than finite p's."""
    import math

    from tests.search_planted import search_trials

    rng = np.random.default_rng(4)
    n = 160
    log_lr, p = rng.uniform(-4, -2, n), rng.uniform(1, 4, n)
    gain = np.exp(rng.uniform(math.log(2), math.log(64), n))
    loss = 2.0 + 0.3 * (log_lr + 3) ** 2 - 0.005 * (p - 1) / 3 + rng.normal(0, 0.002, n)
    p[:8] = math.inf  # 8 runs at ∞, their learning rates in one corner of the range
    log_lr[:8] = rng.uniform(-4, -3.6, 8)
    loss[:8] = 2.0 + 0.3 * (log_lr[:8] + 3) ** 2 + rng.normal(0, 0.002, 8)
    answer = search_answer(study(search_trials(p, 10 ** log_lr, gain, loss)))
    assert answer["separable"] is False and "separates" not in answer["sentence"], answer["sentence"]
    assert all(d["p"] != math.inf for d in answer["effect"]["differences"])
    assert "p = ∞'s 8 configurations hold" in answer["effect"]["inf_apart"]
    assert answer["effect"]["inf_apart"] in answer["sentence"]
    assert "beyond its reach" in answer["effect"]["assumes"]


def test_a_p_groups_medians_count_a_raced_configuration_once():
    """p 1–2 holds three configurations at lr 1e-4 and one at lr 1e-2 raced on four folds: its median
    learning rate is 1e-4 (four configurations), not 1e-2 (seven runs)."""
    from lpstudy.results.answers.mixed_groups import mixed_groups_sentence
    from tests.search_planted import search_trials

    p = [1.2, 1.4, 1.6, 1.8, 1.8, 1.8, 1.8, 3.0, 3.2, 3.4]
    lr = [1e-4, 1e-4, 1e-4, 1e-2, 1e-2, 1e-2, 1e-2, 1e-3, 1e-3, 1e-3]
    trials = search_trials(p, lr, np.full(10, 16.0), np.full(10, 2.0))
    trials["fold"] = [0, 0, 0, 0, 1, 2, 3, 0, 0, 0]
    said = mixed_groups_sentence(study(trials), [1.0, 2.0, 4.0])
    assert "median learning rate 0.001 at p 2–4 but 0.0001 at p 1–2" in said, said


def test_the_importance_of_a_raced_search_counts_each_configuration_once():
    base = p_curve(n=40, seed=2)
    plain, with_races = search_answer(study(base)), search_answer(study(raced(base)))
    assert with_races["importance"]["n_trials"] == plain["importance"]["n_trials"] == 40
    assert with_races["importance"]["shares"].keys() == plain["importance"]["shares"].keys()


def test_a_searchs_divergence_per_p_group_counts_a_raced_configuration_once_and_says_how_many():
    from lpstudy.results.charts import stability as stability_charts
    from lpstudy.results.analysis.stability import divergence_rates
    from lpstudy.results.answers.mixed_groups import search_fields

    trials = raced(p_curve(n=40, seed=2))
    leader = trials.nsmallest(1, "value").iloc[0]
    same = (trials["p"] == leader["p"]) & (trials["lr"] == leader["lr"])  # the leader, on its 4 folds
    trials.loc[same, "diverged"] = True  # diverged on every fold: one configuration that diverges, not four runs
    data = study(trials)
    answer = search_answer(data)
    groups = answer["divergence"]
    assert sum(g["configurations"] for g in groups) == 40 and sum(g["runs"] for g in groups) == 58
    (hit,) = [g for g in groups if g["diverged"]]
    assert hit["diverged"] == 4 and hit["rate"] == pytest.approx(1 / hit["configurations"])
    assert hit["low"] < hit["rate"] < hit["high"]
    # counted per run, the same group would read 4 of its runs
    per_run = divergence_rates(trials, 3)
    assert per_run["rate"].max() == pytest.approx(4 / per_run.loc[per_run["n_diverged"] > 0, "n"].iloc[0])
    rates = divergence_rates(trials, 3, configurations=search_fields(data))
    assert "40 configurations of 58 runs, each counted once" in stability_charts.divergence_rate_chart(rates).layout.title.text


def test_a_searchs_largest_logit_per_p_group_draws_a_raced_configuration_as_one_curve():
    from lpstudy.results.analysis.cohort import curve_cohort
    from lpstudy.results.answers.mixed_groups import search_fields

    trials = raced(p_curve(n=40, seed=2))
    trials["trial_id"] = trials["number"] + 1
    curves = curves_of(trials)
    curves["max_logit"] = 5.0
    leader = trials.nsmallest(1, "value").iloc[0]
    raced_runs = trials.loc[(trials["p"] == leader["p"]) & (trials["lr"] == leader["lr"]) & (trials["fold"] > 0), "number"]
    curves.loc[curves["trial_number"].isin(raced_runs), "max_logit"] = 9.0  # its folds 1–3 read 9, fold 0 reads 5
    data = study(trials)
    bands = curve_cohort(curves, trials, "max_logit", 3, configurations=search_fields(data))
    last = bands.bands[bands.bands["step"] == bands.last_step]
    assert (bands.cohort, bands.cohort_runs) == (40, 58) and last["n"].sum() == 40
    assert "the 40 configurations (58 runs" in bands.caption()
    # the leader is one curve at its folds' mean (8), so its group's median stays at the other configurations' 5
    assert last["median"].tolist() == [5.0] * len(last)
    per_run = curve_cohort(curves, trials, "max_logit", 3)
    assert per_run.cohort == 58 and per_run.bands[per_run.bands["step"] == per_run.last_step]["n"].sum() == 58


def test_a_searchs_spread_per_p_group_draws_a_raced_configuration_once():
    """The Stability page's spread of final loss per p group, on a search: a configuration raced on 4
    folds is one point (its loss on the average fold), and the title says configurations and runs."""
    from lpstudy.results.charts import stability as stability_charts
    from lpstudy.results.answers.mixed_groups import search_fields

    trials = raced(p_curve(n=40, seed=2))
    data = study(trials)
    fig = stability_charts.spread_chart(trials, 3, configurations=search_fields(data))
    assert "40 configurations of 58 runs, each counted once" in fig.layout.title.text
    assert sum(len(trace.y) for trace in fig.data) == 40
    assert sum(len(trace.y) for trace in stability_charts.spread_chart(trials, 3).data) == 58  # per run, as a replicate counts
