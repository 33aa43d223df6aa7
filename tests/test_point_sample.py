"""A chart of one point per trial draws a sample of a big study's points (lpstudy.results.reading.point_sample),
and what it computes from every trial stays exact: the best-so-far lines, the boxes. The sample's
size is made small here (a 300-trial study stands in for 100,000)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from lpstudy.results import analysis as A
from lpstudy.results.charts import effect as effect_charts, stability as stability_charts, trials as trial_charts
from lpstudy.results.charts import compute as compute_figures
from lpstudy.results.reading import point_sample
from lpstudy.results.reading.compute import best_against_compute
from lpstudy.results.reading.frames import load_study
from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.db.kinds import open_reader


LIMIT, BEST = 60, 10


@pytest.fixture(scope="module")
def trials(tmp_path_factory) -> pd.DataFrame:
    # Optuna's journal file: its writes take a second where SQLite's took half a minute; the frame is the
    # same on every storage (tests/test_results.py)
    url = f"journal:///{tmp_path_factory.mktemp('points') / 'study.log'}"
    write_synthetic_study(url, "big", n_trials=300, n_evals=3, seed=4, now=datetime(2026, 1, 1))
    return load_study(open_reader(url), "big", curves=False).trials


@pytest.fixture(autouse=True)
def small_sample(monkeypatch):
    monkeypatch.setattr(point_sample, "CHART_POINTS", LIMIT)
    monkeypatch.setattr(point_sample, "KEEP_BEST", BEST)
    monkeypatch.setattr(stability_charts, "CHART_POINTS", LIMIT)


def _step_value(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A "hv" step line through (xs, ys) read at each of `at`."""
    return ys[np.searchsorted(xs, at, side="right") - 1]


def test_a_big_frame_draws_the_limit_with_the_lowest_losses_and_a_small_one_draws_everything(trials):
    done = A.successful(trials)
    assert len(done) > LIMIT
    drawn = point_sample.drawn_points(done)
    assert len(drawn.rows) == LIMIT and drawn.note.startswith(f"Points of a sample of {LIMIT} of {len(done)} trials")
    lowest = set(done.nsmallest(BEST, "loss")["number"])
    assert lowest <= set(drawn.rows["number"])
    assert drawn.rows.index.equals(point_sample.drawn_points(done).rows.index)  # the same study draws the same
    small = point_sample.drawn_points(done.head(LIMIT))
    assert small.note is None and len(small.rows) == LIMIT


def test_the_history_draws_a_sample_of_points_and_the_exact_best_so_far_line(trials):
    fig = trial_charts.history_chart(trials)
    points, line = fig.data
    done = A.successful(trials).sort_values("number")
    assert len(points.x) == LIMIT and len(line.x) < len(done)
    best = done["loss"].cummin().to_numpy()
    assert np.array_equal(_step_value(np.asarray(line.x), np.asarray(line.y), done["number"].to_numpy()), best)
    assert "sample of 60" in fig.layout.title.subtitle.text


def test_best_against_compute_draws_a_sample_and_the_exact_line(trials):
    frame = best_against_compute(trials)
    fig = compute_figures.best_against_compute_chart(frame)
    markers = [t for t in fig.data if t.mode == "markers"]
    line = next(t for t in fig.data if t.mode == "lines")
    assert sum(len(t.x) for t in markers) <= LIMIT
    scale, _ = compute_figures._time_unit(float(frame["cumulative_s"].iloc[-1]))
    x = frame["cumulative_s"].to_numpy() / scale  # each trial where the chart puts it
    drawn = _step_value(np.asarray(line.x), np.asarray(line.y, dtype="float64"), x)
    want = frame["best_value"].to_numpy()
    assert np.array_equal(np.isnan(drawn), np.isnan(want)) and np.allclose(drawn[~np.isnan(want)], want[~np.isnan(want)])
    best_number = frame.loc[frame["best_value"].idxmin(), "number"]
    assert any(f"trial {best_number} " in text for t in markers for text in t.text)  # the best point is drawn


def test_a_big_spread_chart_draws_each_box_from_every_loss_without_points(trials):
    fig = stability_charts.spread_chart(trials, bins=3)
    (box,) = fig.data
    assert box.boxpoints is False and box.y is None
    ok = A.successful(trials)
    groups = ok.join(A.p_bins(ok["p"], 3))
    for label, q1, median, q3 in zip(box.x, box.q1, box.median, box.q3):
        losses = groups.loc[groups["p_bin"] == label, "loss"].to_numpy()
        assert (q1, median, q3) == tuple(np.percentile(losses, [25, 50, 75]))
    assert sum(len(groups[groups["p_bin"] == label]) for label in box.x) == len(ok)  # every trial in a box


def test_loss_against_p_draws_a_sample_with_the_best_trial_and_says_so(trials):
    fig = effect_charts.loss_vs_p(trials)
    drawn = [int(c[0]) for t in fig.data for c in t.customdata]
    assert len(drawn) == LIMIT
    best = A.successful(trials).nsmallest(1, "loss")["number"].iloc[0]
    assert best in drawn and "sample of 60" in fig.layout.title.subtitle.text
