"""Learning-rate sensitivity (Wortsman et al., arXiv:2309.14322, §2) and the loss-against-LR curve on
hand-made trials frames: diverged runs count as the initial loss, losses above it are capped,
folds that did not run every learning rate are left out; and an LR sweep is a replicate grid."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lpstudy.results.analysis import initial_entropy, lr_curve, lr_sensitivity
from tests.study_helpers import cli, trials_of

LN_V = math.log(65)


def frame(rows):
    """A trials frame with what the analysis reads: (p, lr, fold, final loss or 'div')."""
    out = []
    for number, (p, lr, fold, loss) in enumerate(rows):
        diverged = loss == "div"
        out.append({"number": number, "state": "COMPLETE", "p": p, "lr": lr, "fold": fold,
                    "value": LN_V if diverged else loss, "final_val_loss": math.nan if diverged else loss,
                    "diverged": diverged, "gain_init": 12.0})
    return pd.DataFrame(out)


TRIALS = frame([
    (2.0, 1e-3, 0, 2.0), (2.0, 1e-2, 0, 1.8), (2.0, 1e-1, 0, "div"),
    (2.0, 1e-3, 1, 2.2), (2.0, 1e-2, 1, 1.9), (2.0, 1e-1, 1, 3.0),
    (4.0, 1e-3, 0, 2.1), (4.0, 1e-2, 0, 5.0), (4.0, 1e-1, 0, 2.0),  # 5.0: worse than at the start
    (4.0, 1e-3, 1, 2.5), (4.0, 1e-2, 1, 2.4),  # fold 1 never ran lr = 0.1: left out
    (3.0, 1e-3, 0, 2.0), (3.0, 1e-3, 1, 2.1),  # one learning rate: no sensitivity
])


def test_lr_sensitivity_is_the_mean_excess_over_the_best_lr_with_diverged_runs_at_the_initial_loss():
    table = lr_sensitivity(TRIALS, initial_loss=4.0).set_index("p_bin")
    assert list(table.index) == ["2", "4"]
    two = table.loc["2"]
    fold0 = (2.0 + 1.8 + 4.0) / 3 - 1.8  # the diverged run counts as L0 = 4
    fold1 = (2.2 + 1.9 + 3.0) / 3 - 1.9
    assert two["mean"] == pytest.approx((fold0 + fold1) / 2)
    half = 12.7062047 * pd.Series([fold0, fold1]).std() / math.sqrt(2)  # Student's t, 1 degree of freedom
    assert (two["ci_low"], two["ci_high"]) == pytest.approx((two["mean"] - half, two["mean"] + half), rel=1e-6)
    assert two["n_folds"] == 2 and two["n_lrs"] == 3 and two["best_lr"] == 1e-2
    four = table.loc["4"]
    assert four["n_folds"] == 1  # the fold without lr = 0.1 is left out
    assert four["mean"] == pytest.approx((2.1 + 4.0 + 2.0) / 3 - 2.0)  # 5.0 capped at L0
    assert math.isnan(four["ci_low"])


def test_without_an_initial_loss_the_cap_is_the_diverged_runs_value():
    table = lr_sensitivity(TRIALS).set_index("p_bin")
    assert table.loc["2", "mean"] == pytest.approx(((2.0 + 1.8 + LN_V) / 3 - 1.8 + (2.2 + 1.9 + 3.0) / 3 - 1.9) / 2)


def test_loss_against_learning_rate_one_curve_per_p():
    curve = lr_curve(TRIALS, initial_loss=4.0)
    two = curve[curve["p_bin"] == "2"].set_index("lr")
    assert list(two.index) == [1e-3, 1e-2, 1e-1]
    assert two.loc[1e-1, "mean"] == pytest.approx(3.5) and two.loc[1e-1, "n_diverged"] == 1
    assert two.loc[1e-3, "n"] == 2 and two.loc[1e-3, "ci_low"] < 2.1 < two.loc[1e-3, "ci_high"]
    assert list(curve["p_bin"].unique()) == ["2", "3", "4"]


def test_a_searchs_continuous_learning_rates_are_grouped_into_log_bins():
    """A search samples lr continuously: its curve has one point per lr bin, not one per run."""
    rows = [(p, 10 ** (-4 + 2 * i / 39), 0, 2.0 + 0.01 * i) for p in (2.0, 4.0) for i in range(40)]
    curve = lr_curve(frame(rows))
    for _, group in curve.groupby("p_bin"):
        assert len(group) == 6 and group["n"].sum() == 40
        assert group["lr"].min() > 1e-4 and group["lr"].max() < 1e-2  # bin centres, inside the range
    sensitivity = lr_sensitivity(frame(rows))
    assert list(sensitivity["n_lrs"]) == [6, 6] and list(sensitivity["n_folds"]) == [1, 1]
    sweep = lr_curve(TRIALS)  # a sweep keeps its own learning rates
    assert sorted(set(sweep["lr"])) == [1e-3, 1e-2, 1e-1]


def test_a_search_whose_runs_differ_in_p_and_gain_as_well_as_lr_has_no_lr_sensitivity():
    """LR sensitivity needs lr varied at one p and one gain: a search's runs (each its own p, gain
    and lr, binned into the same p groups) are no sweep, on the page and in the report alike."""
    rows = [(1.0 + 3 * i / 39, 10 ** (-4 + 2 * i / 39), 0, 2.0 + 0.01 * i) for i in range(40)]
    search = frame(rows).assign(gain_init=[2.0 + i for i in range(40)])
    assert lr_sensitivity(search, bins=2).empty
    from types import SimpleNamespace

    from lpstudy.results.pages import STABILITY_LENS, PageInputs
    from lpstudy.results.reading.frames import StudyInfo

    study = SimpleNamespace(trials=search, curves=pd.DataFrame(columns=["trial_number", "step"]), curve_note=None,
                            info=StudyInfo(name="search", kind="search"))  # a search: its configurations count once
    lr_sensitivity_chart = next(c for c in STABILITY_LENS if c.name == "lr_sensitivity")
    figure = lr_sensitivity_chart.build(PageInputs(study, bins=2))
    assert "needs a sweep" in figure.layout.annotations[0].text.replace("<br>", " ")


def test_initial_entropy_per_p_and_gain_rule():
    trials = pd.DataFrame({"number": [0, 1, 2, 3], "p": [2.0, 4.0, 2.0, 4.0], "gain_init": [12, 12, 12, 3.5],
                           "gain_rule": ["default", "default", "matched", "matched"]})
    curves = pd.DataFrame({"trial_number": [0, 1, 2, 3, 0], "step": [0, 0, 0, 0, 100],
                           "attn_entropy": [2.0, 0.6, 2.0, 1.95, 1.0]})
    table = initial_entropy(curves, trials).set_index(["gain_rule", "p_bin"])
    assert table.loc[("default", "4"), "entropy"] == 0.6 and table.loc[("matched", "4"), "entropy"] == 1.95
    assert table.loc[("default", "2"), "n"] == 1  # step 100 is not the initial entropy
    sampled = trials.assign(gain_rule=None, gain_init=[3.0, 12.0, 40.0, 5.0])  # a search sampled the gain
    assert set(initial_entropy(curves, sampled)["gain_rule"]) == {"sampled"}


@pytest.mark.slow
def test_an_lr_sweep_is_a_grid_of_p_by_lr_by_fold_run_once(sqlite_url, capsys):
    args = ["replicate", "--study", "sweep", "--storage", sqlite_url, "--preset", "smoke", "--p", "2,4",
            "--folds", "2", "--lr", "1e-3,3e-2", "--set", "max_steps=10", "--set", "eval_interval=10",
            "--set", "eval_iters=1"]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    assert "8 cells (2 p × 2 lr × 2 folds)" in err
    code, _, err = cli(capsys, "worker", "--study", "sweep", "--storage", sqlite_url, "--devices", "cpu",
                       "--no-progress")
    assert code == 0, err
    code, _, err = cli(capsys, *args)  # run again: resumes, enqueues nothing
    assert code == 0 and "0 enqueued now" in err
    cells = sorted((t.user_attrs["p"], t.user_attrs["lr"], t.user_attrs["fold"]) for t in trials_of(sqlite_url, "sweep"))
    assert cells == sorted((p, lr, f) for p in (2.0, 4.0) for lr in (1e-3, 3e-2) for f in (0, 1))
