"""A grid cell is every gridded field: a learning-rate sweep (p × lr × fold) keeps every learning
rate in its status, its tables and the frames the dashboard and the report draw, and counts its
cells on (p, lr, fold); a `create` grid over p × lr × gain_init × fold counts on all four."""

from __future__ import annotations

import json
import math
import statistics

import pandas as pd
import pytest

from lpstudy.design.spec import StudySpec
from lpstudy.results import analysis as A
from lpstudy.results.reading.frames import load_study
from tests.study_helpers import TINY, lp_env, lpstudy, trials_of
from lpstudy.db.kinds import open_reader


def _values(url: str, study: str) -> dict[tuple[float, float, int], float]:
    """(p, lr, fold) -> the trial's value, read from Optuna itself."""
    out = {}
    for t in trials_of(url, study):
        assert t.state.name == "COMPLETE"
        key = (float(t.user_attrs["p"]), float(t.user_attrs["lr"]), int(t.user_attrs["fold"]))
        assert key not in out  # each cell ran once
        out[key] = t.value
    return out


@pytest.mark.slow
def test_an_lr_sweep_run_by_workers_keeps_every_learning_rate(tmp_path):
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    done = lpstudy("replicate", "--study", "sw", "--storage", url, "--preset", "smoke", "--p", "1,2",
                   "--lr", "1e-3,1e-2", "--folds", "2", *TINY, "--workers", "2", "--devices", "cpu",
                   "--no-progress", env=lp_env(), timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = _values(url, "sw")
    assert len(values) == 8

    status = json.loads(lpstudy("status", "--study", "sw", "--storage", url, "--json").stdout)
    assert status["grid"]["done"] == 8 and status["grid"]["n_cells"] == 8
    assert status["duplicates"] == []
    assert sorted(status["cell"]) == ["fold", "lr", "p"]
    # one row per p and learning rate: the mean of its two folds
    per_p = {(r["p"], r["lr"]): r for r in status["per_p"]}
    assert set(per_p) == {(1.0, 1e-3), (1.0, 1e-2), (2.0, 1e-3), (2.0, 1e-2)}
    for (p, lr), row in per_p.items():
        assert row["n"] == 2
        assert math.isclose(row["mean"], statistics.mean(values[(p, lr, f)] for f in (0, 1)), rel_tol=1e-12)
    # p = 1 against p = 2 fold by fold, each fold's cells over the learning rates averaged: the verdicts'
    (arm,) = status["verdicts"]["arms"]
    diffs = [statistics.mean(values[(1.0, lr, f)] - values[(2.0, lr, f)] for lr in (1e-3, 1e-2)) for f in (0, 1)]
    assert arm["p"] == 1.0 and arm["n_folds"] == 2 and math.isclose(arm["diff"], statistics.mean(diffs), rel_tol=1e-9)

    shown = lpstudy("status", "--study", "sw", "--storage", url)
    assert "grid     8/8 cells done" in shown.stdout and "duplicate" not in shown.stdout, shown.stdout
    assert "final validation loss per p and lr" in shown.stdout

    # what the dashboard and the report read: every trial, and the lens's curve over both learning rates
    data = load_study(open_reader(url), "sw")
    assert len(data.trials) == 8 and data.duplicates == []
    assert data.curves["trial_id"].nunique() == 8
    sensitivity = A.lr_sensitivity(data.trials).set_index("p")
    assert list(sensitivity["n_lrs"]) == [2, 2] and list(sensitivity["n_folds"]) == [2, 2]
    curve = A.lr_curve(data.trials)
    assert len(curve) == 4 and (curve["n"] == 2).all()


@pytest.mark.slow
def test_a_create_grid_counts_cells_on_every_gridded_field(tmp_path):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    made = lpstudy("create", "--study", "g", "--storage", url, "--preset", "smoke", "--sampler", "grid",
                   "--p", "1,2", "--lr", "1e-3,1e-2", "--gain-init", "4,8", "--fold", "0,1", *TINY, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    ran = lpstudy("worker", "--study", "g", "--storage", url, "--devices", "cpu", "--no-progress",
                  "--n-trials", "6", timeout=600, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    status = json.loads(lpstudy("status", "--study", "g", "--storage", url, "--json").stdout)
    assert status["grid"] == {"n_cells": 16, "done": 6, "running": 0, "waiting": 10, "fraction": 6 / 16}
    assert lpstudy("status", "--study", "g", "--storage", url).stdout.count("6/16 cells done") == 1


def test_a_true_copy_of_a_cell_is_left_out_and_other_settings_are_kept():
    from lpstudy.results.analysis.cells import duplicate_cells, grid_fields

    spec = {"kind": "replicate", "sampler": "grid",
            "space": {"p": {"type": "choice", "choices": [1.0, 2.0]},
                      "lr": {"type": "choice", "choices": [0.001, 0.01]},
                      "gain_init": {"type": "choice", "choices": ["matched", 12.0]},
                      "fold": {"type": "choice", "choices": [0, 1]}}}
    assert grid_fields(StudySpec.from_plain(spec)) == ("p", "lr", "gain_init", "fold")
    # trials 0-3: four cells of p = 2, fold 0; trial 4 runs trial 1's cell again. A matched gain at
    # p = 2 resolves to 12 too: the cell is told apart by its parameter, not by the number it ran.
    cells = [(0.001, "matched"), (0.01, "matched"), (0.001, 12.0), (0.01, 12.0), (0.01, "matched")]
    trials = pd.DataFrame({
        "number": range(5), "trial_id": range(5), "state": ["COMPLETE"] * 5, "p": [2.0] * 5,
        "fold": [0.0] * 5, "lr": [lr for lr, _ in cells], "gain_init": [12.0] * 5,
        "param_p": [2.0] * 5, "param_fold": [0] * 5, "param_lr": [lr for lr, _ in cells],
        "param_gain_init": [g for _, g in cells]})
    assert duplicate_cells(trials, grid_fields(StudySpec.from_plain(spec))) == [4]
    assert duplicate_cells(trials) == [1, 2, 3, 4]  # keyed on (p, fold) alone, as before: three lost
