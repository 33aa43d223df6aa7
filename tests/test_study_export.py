"""The best configuration out: `lpstudy export` writes a run file that `lpstudy train --config`
retrains to the same validation loss on CPU; --top K and JSON; the API the dashboard calls."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from lpstudy.training.config import load_run_file, resolve_config
from lpstudy.errors import UserError
from lpstudy.results.export import export_text, train_command
from tests.study_helpers import TINY, best_by_hand, cli, lp_env, lpstudy, trials_of
from lpstudy.db.kinds import open_reader


@pytest.mark.slow
def test_export_then_train_reproduces_the_stored_validation_loss(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "create", "--study", "s", "--storage", sqlite_url, "--preset", "smoke", *TINY,
                       "--sampler", "random", "--sampler-seed", "3", "--pruner", "none", "--seed", "7",
                       "--spread-trials", "0")
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "s", "--storage", sqlite_url, "--devices", "cpu",
                       "--n-trials", "2", "--no-progress")
    assert code == 0, err
    trials = trials_of(sqlite_url, "s")
    best = best_by_hand(trials)  # the first trial, raced on fold 1 by the second
    raced = [t for t in trials if t.state.name == "COMPLETE" and t.params == best.params]

    out = tmp_path / "best.yaml"
    code, stdout, err = cli(capsys, "export", "--study", "s", "--storage", sqlite_url, "-o", str(out))
    assert code == 0 and stdout == "" and f"lpstudy train --config {out}" in err
    data = yaml.safe_load(out.read_text())
    assert data["preset"] == "smoke"
    assert {k: data[k] for k in ("p", "lr", "gain_init", "fold", "folds", "seed")} == {
        "p": best.user_attrs["p"], "lr": best.user_attrs["lr"], "gain_init": best.user_attrs["gain_init"],
        "fold": 0, "folds": 10, "seed": 7}
    assert data["max_steps"] == 30 and data["eval_interval"] == 10 and "device" not in data
    assert data["threads"] == 1  # the worker's CPU thread count: float sums depend on it
    assert {k: data["source"][k] for k in ("study", "trial", "value", "final_val_loss", "diverged",
                                           "lpstudy_version")} == {
        "study": "s", "trial": best.number, "value": best.value,
        "final_val_loss": best.user_attrs["final_val_loss"], "diverged": False,
        "lpstudy_version": best.user_attrs["version"]}
    assert data["source"]["folds_measured"] == len(raced) == 2 and data["source"]["chosen_as"] == "best"
    assert data["source"]["mean_over_folds"] == pytest.approx(sum(t.value for t in raced) / 2)
    assert list(tmp_path.glob(".best.yaml*")) == []  # the temporary file of the atomic write is gone

    # retrained by a process whose default thread count differs from the worker's
    retrained = lpstudy("train", "--config", str(out), "--json", env=lp_env(OMP_NUM_THREADS="2"), cwd=tmp_path)
    assert retrained.returncode == 0, retrained.stderr
    result = json.loads(retrained.stdout)
    assert result["final_val_loss"] == pytest.approx(best.user_attrs["final_val_loss"], rel=1e-6, abs=1e-7)
    assert result["config"]["p"] == best.user_attrs["p"] and result["config"]["seed"] == 7

    # the top K, as JSON, best first, one run a configuration: here one, its race's run on fold 1 is no other;
    # the API the dashboard's Export page calls gives the same file
    code, stdout, _ = cli(capsys, "export", "--study", "s", "--storage", sqlite_url, "--format", "json", "--top", "2")
    body = json.loads(stdout)
    assert body["study"] == "s" and [r["source"]["trial"] for r in body["runs"]] == [best.number]
    assert export_text(open_reader(sqlite_url), "s") == out.read_text()
    assert train_command("my best.yaml") == "lpstudy train --config 'my best.yaml'"


def test_p_infinity_survives_the_export(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "create", "--study", "inf", "--storage", sqlite_url, "--preset", "smoke",
                       "--set", "max_steps=10", "--set", "eval_interval=5", "--set", "eval_iters=1",
                       "--p", "inf", "--lr", "2e-3", "--gain-init", "8")
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "inf", "--storage", sqlite_url, "--devices", "cpu",
                       "--n-trials", "1", "--no-progress")
    assert code == 0, err
    (trial,) = trials_of(sqlite_url, "inf")
    assert trial.user_attrs["p"] == "inf" and trial.params == {}  # ∞ as lpstudy writes it
    path = tmp_path / "inf.yaml"
    path.write_text(export_text(open_reader(sqlite_url), "inf"))
    assert "p: inf" in path.read_text()
    preset, overrides, source = load_run_file(path)
    config = resolve_config(preset, overrides)
    assert math.isinf(config.p) and config.lr == 2e-3 and config.gain_init == 8.0
    assert source["trial"] == 0


def test_export_of_a_study_without_a_completed_trial_is_refused(sqlite_url, capsys):
    code, _, err = cli(capsys, "create", "--study", "empty", "--storage", sqlite_url, "--preset", "smoke")
    assert code == 0, err
    code, out, err = cli(capsys, "export", "--study", "empty", "--storage", sqlite_url, "-o", "never.yaml")
    assert code == 2 and out == ""
    assert err.startswith("lpstudy: error: study 'empty' has no completed trial") and err.count("\n") == 1
    with pytest.raises(UserError, match="no completed trial"):
        export_text(open_reader(sqlite_url), "empty")
    with pytest.raises(UserError, match="no study named 'nope'"):
        export_text(open_reader(sqlite_url), "nope")
