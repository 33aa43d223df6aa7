"""A search's pages that group runs by p (Convergence, Stability, Stability lens) say in one
sentence that the groups mix p with the learning rate and gain each run drew, with the medians that
differ and the replicate that separates them; a study whose arms hold everything but p fixed says
nothing of it. Titles name only what the chart draws: the spread across what varies, an interval
only where one is drawn, the gain rules the runs started from."""

from __future__ import annotations

import pandas as pd

from lpstudy.results.answers.mixed_groups import mixed_groups_sentence
from lpstudy.results.charts.stability import spread_chart
from lpstudy.results.reading.frames import StudyData, StudyInfo
from lpstudy.results.charts.lens import initial_entropy_chart, lr_curve_chart


def _search(kind: str = "search", gains=(40.0, 42.0, 5.0, 6.0)) -> StudyData:
    trials = pd.DataFrame({"number": range(4), "state": ["COMPLETE"] * 4, "value": [3.0, 3.1, 2.9, 3.0],
                           "diverged": [False] * 4, "p": [1.0, 1.5, 3.0, 3.5], "lr": [1e-3] * 4,
                           "gain_init": list(gains), "fold": [0.0] * 4, "seed": [0.0] * 4})
    return StudyData("lp", StudyInfo("lp", kind=kind, preset="smoke"), trials, pd.DataFrame())


def test_a_search_with_a_sampled_gain_says_its_p_groups_mix_p_with_it_and_what_separates_them():
    sentence = mixed_groups_sentence(_search(), bins=(1.0, 2.0, 4.0))
    assert sentence.startswith("Each p group here mixes p with the learning rate and gain its runs drew ")
    assert "median gain₀ 41 at p 1–2 but 5.5 at p 2–4" in sentence, sentence
    assert "learning rate 0." not in sentence  # one learning rate: nothing to name
    assert sentence.endswith("`lpstudy replicate --study lp-matched --preset smoke --p 1,2,3,4 --gain-init matched "
                             "--folds 5`")
    assert sentence.count(". ") == 0  # one sentence


def test_no_sentence_where_the_arms_hold_everything_but_p_fixed_or_nothing_else_varies():
    assert mixed_groups_sentence(_search(kind="replicate")) is None
    assert mixed_groups_sentence(_search(gains=(16.0,) * 4)) is None


def test_the_spread_title_names_what_varies_between_the_runs():
    trials = _search().trials
    assert spread_chart(trials).layout.title.text == "Spread of final validation loss across runs, per p"
    folds = trials.assign(fold=[0.0, 1.0, 0.0, 1.0])
    assert spread_chart(folds).layout.title.text == "Spread of final validation loss across folds, per p"
    both = folds.assign(seed=[0.0, 0.0, 1.0, 1.0])
    assert spread_chart(both).layout.title.text == "Spread of final validation loss across folds and seeds, per p"


def test_the_lr_curve_names_an_interval_only_where_it_draws_one():
    curve = pd.DataFrame({"p_bin": ["1", "2"], "p": [1.0, 2.0], "lr": [1e-3, 1e-3], "mean": [3.0, 3.1],
                          "ci_low": [2.9, 3.0], "ci_high": [3.1, 3.2], "n": [1, 2], "n_diverged": [0, 0]})
    fig = lr_curve_chart(curve)
    assert fig.layout.title.text == "Final loss against learning rate per p"
    assert all(not any(t.error_y.array) for t in fig.data if t.error_y and t.error_y.array is not None)
    drawn = lr_curve_chart(curve.assign(n=[3, 3]))
    assert drawn.layout.title.text == "Final loss against learning rate per p (95 % interval)"


def test_the_initial_entropy_title_names_the_gain_rules_its_runs_started_from():
    table = pd.DataFrame({"p_bin": ["1", "2"], "p": [1.0, 2.0], "gain_rule": ["sampled", "sampled"], "n": [1, 1],
                          "entropy": [3.0, 2.0], "gain_init": [40.0, 5.0]})
    assert initial_entropy_chart(table).layout.title.text == "Attention entropy at initialisation against p, sampled gains"
    both = table.assign(gain_rule=["fixed", "matched"])
    assert initial_entropy_chart(both).layout.title.text == ("Attention entropy at initialisation against p, fixed and "
                                                             "matched gains")
