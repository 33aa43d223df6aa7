"""One configuration, one observation: a search whose leaders are raced on more folds counts each
configuration once (its folds averaged with the fold as a factor) in its surrogate, its rank
correlations, its p groups and its convergence, and says how many configurations and runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.analysis.configurations import per_configuration
from lpstudy.results.answers.search import search_answer
from lpstudy.results.answers.search_convergence import GROUPS, search_convergence
from tests.search_planted import p_curve, study

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


def test_races_alone_do_not_narrow_the_surrogates_band_and_the_answer_counts_configurations_and_runs():
    base = p_curve(n=40, seed=2)
    plain, with_races = search_answer(study(base)), search_answer(study(raced(base)))
    width = lambda a: np.mean([d["high"] - d["low"] for d in a["effect"]["differences"]])  # noqa: E731
    assert width(with_races) >= 0.85 * width(plain), (width(with_races), width(plain))
    assert with_races["n_runs"] == 58 and with_races["n_configurations"] == 40
    assert with_races["effect"]["n_fit"] == 40 and with_races["effect"]["n_configurations"] == 40
    assert "40 configurations at finite p (58 runs" in with_races["sentence"], with_races["sentence"]
    # the rank correlations: one point per configuration, as without the races
    assert with_races["entanglement"] == plain["entanglement"]


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
    assert convergence["configurations"] == 40 and convergence["runs"] == 58
    assert sum(r["runs"] for r in convergence["restricted_mean"]) == 40
    assert len(convergence["restricted_mean"]) <= GROUPS + 1 and len(convergence["reach"]) <= GROUPS + 1
    assert convergence["resolution"]["eval_interval"] == 25
    assert "40 configurations of 58 runs, each counted once" in convergence["sentence"]
    assert "no verdict on p here" in convergence["sentence"]
    for row in convergence["restricted_mean"]:
        assert 0 <= row["low"] <= row["rmst"] <= row["high"] <= 300


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
