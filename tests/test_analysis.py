"""The numbers behind the dashboard's charts, on hand-made frames: p groups (∞ apart), intervals,
the per-p summary, steps to a threshold, area under the curve,
divergence rates, and what a page says when there is nothing to chart."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.design.spec import StudySpec
from lpstudy.results import analysis as A

T_975 = {2: 4.302652729911275, 3: 3.182446305284263, 4: 2.7764451051977987}  # Student's t, 97.5 %


def trials_frame(rows: list[dict]) -> pd.DataFrame:
    """A trials frame with the columns the analysis reads; unspecified values take defaults."""
    defaults = {"state": "COMPLETE", "value": math.nan, "p": 2.0, "lr": 1e-3, "gain_init": 16.0, "fold": 0.0,
                "diverged": False, "final_val_loss": math.nan, "started_at": None, "datetime_start": pd.NaT,
                "device": "cpu", "host": "h", "worker": "h/1/cpu", "last_step": math.nan, "last_val_loss": math.nan,
                "seed": 0.0}
    frame = pd.DataFrame([{**defaults, "number": i, **row} for i, row in enumerate(rows)],
                         columns=[*defaults, "number"] if not rows else None)
    frame["diverged"] = frame["diverged"].astype(bool)
    return frame


def curves_frame(per_trial: dict[int, list[tuple[int, float]]]) -> pd.DataFrame:
    rows = [{"trial_id": n + 1, "trial_number": n, "step": s, "val_loss": v, "train_loss": v - 0.01,
             "grad_norm": 1.0, "grad_norm_max": 2.0 + n, "gain_mean": 16.0 + s / 100}
            for n, points in per_trial.items() for s, v in points]
    return pd.DataFrame(rows)


# --- p groups -------------------------------------------------------------------------------

def test_exact_p_values_are_their_own_groups_and_infinity_comes_last():
    p = pd.Series([3.0, 1.0, math.inf, 2.0, 1.0])
    groups = A.p_bins(p)
    assert list(groups["p_bin"]) == ["3", "1", "∞", "2", "1"]
    order = groups.sort_values("p_order")["p_bin"].drop_duplicates().tolist()
    assert order == ["1", "2", "3", "∞"]


def test_equal_width_bins_over_the_finite_range_with_infinity_apart():
    p = pd.Series([1.0, 1.4, 2.6, 4.0, math.inf])
    groups = A.p_bins(p, 3)  # edges 1, 2, 3, 4
    assert list(groups["p_low"][:4]) == [1.0, 1.0, 2.0, 3.0]
    assert list(groups["p_high"][:4]) == [2.0, 2.0, 3.0, 4.0]  # the largest value falls in the last bin
    assert groups["p_bin"].iloc[4] == "∞" and math.isinf(groups["p_order"].iloc[4])
    assert groups["p_center"].iloc[0] == pytest.approx(1.5)


def test_infinity_is_drawn_right_of_the_largest_finite_p_and_labelled():
    p = pd.Series([1.0, 4.0, math.inf])
    where = A.inf_position(p)
    assert where > 4.0
    assert list(A.p_positions(p)) == [1.0, 4.0, where]
    values, labels = A.p_ticks(p)
    assert labels[-1] == "∞" and values[-1] == where
    assert A.p_ticks(pd.Series([1.0, 2.0])) is None  # nothing to relabel without ∞
    assert A.format_p(math.inf) == "∞" and A.format_p(2.5) == "2.5"


def test_a_grid_keeps_its_values_and_a_search_is_binned():
    assert A.default_p_bins(pd.Series([1, 1.5, 2, 2.5, 3, 3.5, 4, math.inf] * 10)) is None
    assert A.default_p_bins(pd.Series(np.linspace(1, 4, 100))) == A.DEFAULT_P_BINS
    # a search with few distinct p values, some close together: its labels would overlap, so it is binned,
    # into fewer bins than a large search (bins that hold more than one run)
    few = pd.Series([1.2, 2.1, 3.49, 3.52, 3.54, 3.6, 3.9, 2.7])
    assert not A.exact_p_fit(few) and 2 <= A.default_p_bins(few) < A.DEFAULT_P_BINS
    assert A.default_p_bins(pd.Series([1.0, 2.5, 4.0])) is None  # a few values far apart fit as they are


# --- intervals ------------------------------------------------------------------------------

def test_t_interval_matches_the_textbook_formula():
    values = [1.0, 2.0, 4.0]
    mean, low, high = A.t_interval(values)
    half = T_975[2] * np.std(values, ddof=1) / math.sqrt(3)
    assert mean == pytest.approx(7 / 3)
    assert (low, high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert math.isnan(A.t_interval([1.0])[1])  # one value: no interval


def test_wilson_interval_is_inside_zero_one_even_at_the_edges():
    low, high = A.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = A.wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)
    assert all(math.isnan(v) for v in A.wilson_interval(0, 0))


@pytest.mark.parametrize("k,n,confidence,z", [(3, 10, 0.95, 1.959963985), (1, 2, 0.95, 1.959963985),
                                              (7, 40, 0.90, 1.644853627), (5, 5, 0.99, 2.575829304)])
def test_wilson_interval_is_wilsons_formula(k, n, confidence, z):
    """(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n), with z the normal quantile written out."""
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert A.wilson_interval(k, n, confidence) == (pytest.approx(centre - half, abs=1e-9),
                                                   pytest.approx(min(1.0, centre + half), abs=1e-9))
    if k == 3:
        assert A.wilson_interval(k, n) == (pytest.approx(0.1078, abs=1e-4), pytest.approx(0.6032, abs=1e-4))


# --- effect of p ----------------------------------------------------------------------------

def test_per_p_summary_averages_completed_runs_and_counts_diverged_apart():
    trials = trials_frame([
        {"p": 2.0, "value": 1.0}, {"p": 2.0, "value": 2.0}, {"p": 2.0, "value": 4.0},
        {"p": 2.0, "value": math.log(65), "diverged": True},   # counted, never averaged
        {"p": 3.0, "value": 1.5}, {"p": 3.0, "state": "PRUNED", "value": 3.0},  # pruned: not a result
        {"p": math.inf, "value": 1.25},
        {"p": 2.0, "state": "RUNNING"},
    ])
    summary = A.per_p_summary(trials)
    assert list(summary["p_bin"]) == ["2", "3", "∞"]
    two = summary.iloc[0]
    assert (two["n"], two["n_ok"], two["n_diverged"]) == (4, 3, 1)
    assert two["divergence_rate"] == pytest.approx(0.25)
    assert two["mean"] == pytest.approx(7 / 3)
    assert two["std"] == pytest.approx(np.std([1, 2, 4], ddof=1))
    assert two["ci_high"] - two["mean"] == pytest.approx(T_975[2] * two["std"] / math.sqrt(3))
    assert two["best"] == 1.0
    three = summary.iloc[1]
    assert (three["n"], three["mean"]) == (1, 1.5) and math.isnan(three["ci_low"])


def test_p_lr_map_bins_learning_rates_on_a_log_scale():
    trials = trials_frame([
        {"p": 1.0, "lr": 1e-4, "value": 2.0}, {"p": 1.0, "lr": 1e-2, "value": 4.17, "diverged": True},
        {"p": 4.0, "lr": 1e-2, "value": 4.17, "diverged": True}, {"p": 4.0, "lr": 1e-2, "value": 1.5},
    ])
    cells = A.p_map(trials, None, lr_bin_count=2)
    high = cells[(cells["p_bin"] == "4") & (cells["y_order"] == 1)].iloc[0]
    assert (high["n"], high["n_diverged"], high["divergence_rate"], high["mean_loss"]) == (2, 1, 0.5, 1.5)
    assert set(cells["y_order"]) == {0.0, 1.0}
    assert A.map_axis(trials) == "lr"
    grid = trials_frame([{"p": 2.0, "fold": f, "value": 1.0} for f in range(3)])
    assert A.map_axis(grid) == "fold"


def test_the_p_fold_map_of_a_repeated_study_has_a_row_per_repeat_of_each_fold():
    """`--repeats 2`: fold 0 ran twice on different partitions; the map keeps the two runs apart, each
    under its own label, rather than their mean under "0"."""
    from lpstudy.results.charts import effect as effect_charts

    losses = {(0, 0): 1.0, (0, 1): 3.0, (1, 0): 2.0, (1, 1): 2.5}  # (fold, repeat): loss
    grid = trials_frame([{"p": 2.0, "fold": float(f), "repeat": float(r), "value": v} for (f, r), v in losses.items()])
    assert A.map_axis(grid) == "repeat_fold"
    cells = A.p_map(grid, None, by=A.map_axis(grid)).sort_values("y_order")
    assert cells["y_bin"].tolist() == ["fold 0, repeat 0", "fold 1, repeat 0", "fold 0, repeat 1", "fold 1, repeat 1"]
    assert cells["mean_loss"].tolist() == [1.0, 2.0, 3.0, 2.5] and cells["n"].tolist() == [1, 1, 1, 1]
    fig = effect_charts.loss_map(cells, A.map_axis(grid))
    assert fig.layout.title.text.startswith("Validation loss over p × fold and repeat")
    assert list(fig.data[0].y) == cells["y_bin"].tolist()
    once = trials_frame([{"p": 2.0, "fold": float(f), "value": 1.0} for f in range(2)])  # no repeat column
    assert A.map_axis(once) == "fold" and A.map_axis(once.assign(repeat=0.0)) == "fold"


def test_parameter_importance_finds_the_parameter_the_loss_depends_on():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(60):
        p, lr = rng.uniform(1, 4), 10 ** rng.uniform(-4, -2)
        rows.append({"p": p, "lr": lr, "gain_init": 16.0, "value": 1.5 + 0.5 * (p - 2.5) ** 2 + rng.normal(0, 0.001)})
    found = A.param_importance(trials_frame(rows))
    importance = found.shares
    assert importance.index[0] == "p"
    assert importance["p"] > 0.5 > found.null > importance["lr"]  # p explains much (its quartiles do), lr is noise
    assert found.low["p"] <= importance["p"] <= found.high["p"]
    assert "gain_init" not in importance  # never varied
    assert A.param_importance(trials_frame(rows[:3])).empty  # too few trials
    without_params = trials_frame(rows + [{"value": 1.0, "p": math.nan, "lr": math.nan}])  # a trial added by hand
    assert A.param_importance(without_params).shares.index[0] == "p"  # that trial is left out, not the parameters


# --- convergence ----------------------------------------------------------------------------

def test_steps_to_threshold_is_the_first_evaluation_at_or_below_it():
    curves = curves_frame({0: [(100, 3.0), (200, 2.0), (300, 1.5)], 1: [(100, 3.0), (200, 2.5)],
                           2: [(100, 1.9), (200, 2.1)]})
    steps = A.steps_to_threshold(curves, 2.0)
    assert steps[0] == 200 and math.isnan(steps[1]) and steps[2] == 100


def test_area_under_the_curve_is_the_mean_loss_over_the_steps_spanned():
    curves = curves_frame({0: [(0, 3.0), (100, 2.0), (200, 1.0)], 1: [(0, 3.0), (200, 3.0)], 2: [(50, 2.0)]})
    auc = A.area_under_curve(curves)
    assert auc[0] == pytest.approx(2.0) and auc[1] == pytest.approx(3.0)
    assert math.isnan(auc[2])  # one evaluation: no area


def test_curve_cohort_bands_give_the_median_and_quartiles_per_p_and_step():
    trials = trials_frame([{"p": 2.0, "value": 1.0}, {"p": 2.0, "value": 1.0}, {"p": 2.0, "value": 1.0},
                           {"p": 2.0, "value": 4.17, "diverged": True}])
    curves = curves_frame({0: [(100, 1.0)], 1: [(100, 2.0)], 2: [(100, 3.0)], 3: [(100, 9.0)]})
    bands = A.curve_cohort(curves, trials).bands
    row = bands.iloc[0]
    assert (row["median"], row["q25"], row["q75"], row["n"]) == (2.0, 1.5, 2.5, 3)  # the diverged run left out
    assert A.curve_cohort(curves, trials, include_diverged=True).bands.iloc[0]["n"] == 4


def test_convergence_by_trial_joins_threshold_and_area():
    trials = trials_frame([{"p": 2.0, "value": 1.5}, {"p": 3.0, "value": 1.4}])
    curves = curves_frame({0: [(0, 3.0), (100, 1.5)], 1: [(0, 3.0), (100, 2.5)]})
    table = A.convergence_by_trial(curves, trials, threshold=2.0)
    assert list(table["reached"]) == [True, False]
    assert table["auc"].iloc[0] == pytest.approx(2.25)


# --- stability ------------------------------------------------------------------------------

def test_divergence_rates_per_p_with_wilson_intervals():
    trials = trials_frame([{"p": 1.0, "value": 1.0}] * 9 + [{"p": 1.0, "value": 4.17, "diverged": True}]
                          + [{"p": 4.0, "value": 4.17, "diverged": True}] * 2)
    rates = A.divergence_rates(trials)
    one, four = rates.iloc[0], rates.iloc[1]
    assert (one["n"], one["n_diverged"], one["rate"]) == (10, 1, 0.1)
    assert one["ci_low"] < 0.1 < one["ci_high"]
    assert four["rate"] == 1.0 and four["ci_high"] == 1.0


def test_largest_gradient_norm_per_trial():
    trials = trials_frame([{"p": 2.0, "value": 1.0}, {"p": 3.0, "value": 4.17, "diverged": True}])
    curves = curves_frame({0: [(100, 2.0), (200, 1.0)], 1: [(100, 2.0)]})
    grads = A.max_grad_norms(curves, trials).set_index("trial_number")
    assert grads.loc[0, "max_grad_norm"] == 2.0 and grads.loc[1, "max_grad_norm"] == 3.0
    assert bool(grads.loc[1, "diverged"])


def test_replicate_spread_across_folds():
    trials = trials_frame([{"p": 2.0, "fold": f, "value": v} for f, v in enumerate([1.0, 1.2, 1.4])])
    spread = A.replicate_spread(trials).iloc[0]
    assert spread["range"] == pytest.approx(0.4) and spread["std"] == pytest.approx(0.2)


# --- overview -------------------------------------------------------------------------------

def test_what_the_pages_say_when_there_is_nothing_to_chart():
    assert A.data_problem(trials_frame([]), "s1") == (
        "This study has no trials yet. Start workers with `lpstudy worker --study s1 --storage URL`.")
    assert "No trial has completed" in A.data_problem(trials_frame([{"state": "RUNNING"}, {"state": "WAITING"}]), "s1")
    assert "Every completed trial diverged" in A.data_problem(
        trials_frame([{"value": 4.17, "diverged": True}, {"state": "FAIL"}]), "s1")
    assert A.data_problem(trials_frame([{"value": 1.0}]), "s1") is None


def test_best_trial_ignores_diverged_and_unfinished_runs():
    trials = trials_frame([{"value": 1.5}, {"value": 0.1, "diverged": True}, {"state": "PRUNED", "value": 0.2},
                           {"value": 1.2, "p": math.inf}])
    best = A.best_trial(trials)
    assert best["number"] == 3 and math.isinf(best["p"])
    assert list(A.top_trials(trials, 5)["number"]) == [3, 0]


def test_state_counts_include_every_state():
    counts = A.state_counts(trials_frame([{"state": "RUNNING"}, {"state": "COMPLETE", "value": 1.0}]))
    assert list(counts.index) == list(A.STATES)
    assert counts["RUNNING"] == 1 and counts["FAIL"] == 0


def test_grid_progress_counts_cells_done_once():
    spec = {"kind": "replicate", "n_cells": 4}
    trials = trials_frame([{"p": 2.0, "fold": 0, "value": 1.0}, {"p": 2.0, "fold": 0, "value": 1.1},
                           {"p": 2.0, "fold": 1, "state": "RUNNING"}, {"p": 3.0, "fold": 0, "state": "WAITING"}])
    progress = A.grid_progress(trials, StudySpec.from_plain(spec))
    assert progress is not None and progress.to_plain() == {"n_cells": 4, "done": 1, "running": 1, "waiting": 1,
                                                            "fraction": 0.25}
    assert A.grid_progress(trials, StudySpec.from_plain({"kind": "search"})) is None


def test_running_trials_say_who_runs_what_since_when():
    start = pd.Timestamp("2026-01-01T10:00:00Z")
    trials = trials_frame([{"state": "RUNNING", "started_at": start.isoformat(), "device": "cuda:1", "host": "gpu7"}])
    running = A.running_trials(trials, now=start + pd.Timedelta(seconds=90))
    assert running.iloc[0]["running_s"] == 90 and running.iloc[0]["device"] == "cuda:1"


def test_filter_trials_by_state_p_range_lr_range_and_divergence():
    trials = trials_frame([{"p": 1.5, "lr": 1e-3, "value": 1.0}, {"p": 3.5, "lr": 1e-2, "value": 4.1, "diverged": True},
                           {"p": math.inf, "lr": 1e-3, "value": 1.2}, {"p": 2.0, "state": "FAIL"}])
    assert list(A.filter_trials(trials, states=["COMPLETE"])["number"]) == [0, 1, 2]
    assert list(A.filter_trials(trials, p_range=(1.0, 2.0))["number"]) == [0, 2, 3]
    assert list(A.filter_trials(trials, p_range=(1.0, 2.0), include_inf=False)["number"]) == [0, 3]
    assert list(A.filter_trials(trials, lr_range=(5e-3, 2e-2))["number"]) == [1]
    assert list(A.filter_trials(trials, diverged=True)["number"]) == [1]


def test_the_ranked_frame_keeps_completed_finite_undiverged_runs_best_first():
    from lpstudy.design.best import is_candidate, ranked_frame

    # (state, value, diverged, whether it can be the best: decided by hand)
    table = [("COMPLETE", 1.0, False, True), ("COMPLETE", 0.5, True, False), ("COMPLETE", math.inf, False, False),
             ("COMPLETE", -math.inf, False, False), ("COMPLETE", None, False, False),
             ("PRUNED", 0.2, False, False), ("FAIL", 0.1, False, False), ("RUNNING", 0.3, False, False),
             ("COMPLETE", 1.0, False, True), ("COMPLETE", 0.7, False, True), ("COMPLETE", 2.0, False, True),
             ("COMPLETE", -3.0, False, True), ("COMPLETE", math.nan, False, False)]
    assert [is_candidate(state, value, diverged) for state, value, diverged, _ in table] == [t[3] for t in table]
    rows = [{"state": state, "value": value, "diverged": diverged} for state, value, diverged, _ in table]
    trials = trials_frame(rows).sample(frac=1.0, random_state=1)  # not in number order
    ranked = ranked_frame(trials)
    # by loss, ties by trial number: -3 (trial 11), 0.7 (9), 1.0 (0, then 8), 2.0 (10)
    assert list(zip(ranked["loss"], ranked["number"])) == [(-3.0, 11), (0.7, 9), (1.0, 0), (1.0, 8), (2.0, 10)]
    assert list(ranked_frame(trials, 3)["number"]) == [11, 9, 0]
    assert ranked_frame(trials.iloc[0:0]).empty


def test_the_cohort_counts_its_trials_at_each_step_where_a_resumed_trial_lacks_the_early_ones():
    """Three trials at p = 2 reach step 300; trial 2 was resumed from a checkpoint at step 200 and
    holds no evaluation before it: steps 100 and 200 hold 2 of the cohort's 3 (and 3 from step 200),
    and the legend says so."""
    from lpstudy.results.charts import convergence as convergence_charts

    trials = trials_frame([{"p": 2.0, "value": 1.5}, {"p": 2.0, "value": 1.6}, {"p": 2.0, "value": 1.7}])
    curves = curves_frame({0: [(100, 2.0), (200, 1.8), (300, 1.5)], 1: [(100, 2.1), (200, 1.9), (300, 1.6)],
                           2: [(200, 1.9), (300, 1.7)]})
    cohort = A.curve_cohort(curves, trials, "val_loss")
    assert cohort.cohort == 3
    assert dict(zip(cohort.bands["step"], cohort.bands["n"])) == {100: 2, 200: 3, 300: 3}
    names = [trace.name for trace in convergence_charts.median_curves(cohort).data if trace.name]
    assert "p 2 (n = 3, 2 at some steps)" in names, names


def test_a_big_studys_curve_sample_is_stratified_on_the_bins_the_charts_open_with():
    """2,000 trials crowded at high p: the sample holds PER_GROUP trials (or all it has) of every one
    of the charts' 8 bins over the searched range, not of 10 fixed groups over the trials' range."""
    from lpstudy.results.analysis.curve_sample import PER_GROUP, curve_sample

    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(1.0, 4.0, 500), rng.uniform(3.7, 4.0, 1500)])  # a sampler crowding p ≈ 4
    trials = trials_frame([{"p": float(v), "value": 1.5} for v in p]).assign(trial_id=lambda t: t["number"] + 1)
    spec = StudySpec.from_plain({"space": {"p": {"type": "range", "low": 1.0, "high": 4.0}}})
    sample = curve_sample(trials, spec=spec)
    edges = A.default_p_groups(trials, spec)
    assert len(edges) == 9 and edges[0] == 1.0 and edges[-1] == 4.0
    chosen = trials[trials["trial_id"].isin(sample.trial_ids)]
    per_bin = A.p_bins(chosen["p"], list(edges))["p_bin"].value_counts()
    every = A.p_bins(trials["p"], list(edges))["p_bin"].value_counts()
    assert len(per_bin) == 8 and (per_bin == every.clip(upper=PER_GROUP).reindex(per_bin.index)).all(), per_bin
