"""The read side on studies that real workers wrote (tests/real_study.py): the frames, `lpstudy
status`, `export` (and retraining what it exports), `report` and the analysis read them as Optuna
holds them, p = ∞, a pruned and a diverged run included. Every expected value is computed here,
from Optuna's own FrozenTrials and the metrics table read with sqlite3."""

from __future__ import annotations

import json
import re
import math
import sqlite3
import statistics
from collections import Counter, defaultdict

import pytest
import yaml

from lpstudy.results.reading import frames
from lpstudy.values import read_p
from tests.study_helpers import best_by_hand, cli, lp_env, lpstudy, trials_of
from lpstudy.db.kinds import open_reader

T_975 = {1: 12.706204736174707}  # Student's t, 97.5 %, by degrees of freedom
STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")


def steps_by_sql(real, name: str) -> dict[int, list[int]]:
    """trial_id -> the steps of the metrics rows the workers wrote, read with sqlite3 alone."""
    conn = sqlite3.connect(f"file:{real.path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT trial_id, step FROM lpstudy_metrics WHERE study_name = ? ORDER BY step",
                            (name,)).fetchall()
    finally:
        conn.close()
    out: dict[int, list[int]] = defaultdict(list)
    for trial_id, step in rows:
        out[trial_id].append(step)
    return dict(out)


def test_the_real_study_holds_what_it_is_for(real_study):
    search = trials_of(real_study.url, real_study.search)
    assert {t.state.name for t in search} == {"COMPLETE", "PRUNED"}
    assert any(t.user_attrs["diverged"] for t in search)
    assert any(math.isinf(read_p(t.user_attrs["p"])) for t in search)  # stored as "inf"
    assert any(math.isfinite(read_p(t.user_attrs["p"])) for t in search)
    grid = trials_of(real_study.url, real_study.grid)
    assert sorted((read_p(t.user_attrs["p"]), t.user_attrs["fold"]) for t in grid) == [
        (1.0, 0), (1.0, 1), (2.0, 0), (2.0, 1), (math.inf, 0), (math.inf, 1)]


@pytest.mark.parametrize("study", ["search", "grid"])
def test_the_trials_frame_is_what_the_workers_stored(real_study, study):
    raw = {t.number: t for t in trials_of(real_study.url, study)}
    frame = frames.load_trials(open_reader(real_study.url), study).set_index("number")
    assert sorted(frame.index) == sorted(raw)
    assert frame["p"].dtype == "float64"  # ∞ read as a number, however a worker stored it
    for number, trial in raw.items():
        row, attrs = frame.loc[number], trial.user_attrs
        assert row["state"] == trial.state.name
        assert row["value"] == trial.value
        assert row["p"] == read_p(attrs["p"]) and row["lr"] == attrs["lr"] and row["gain_init"] == attrs["gain_init"]
        assert row["fold"] == attrs["fold"] and row["seed"] == attrs["seed"]
        assert bool(row["diverged"]) is attrs["diverged"]
        assert row["gain_rule"] == attrs["gain_rule"]
        assert row["steps"] == attrs["steps"] and row["host"] == attrs["host"] and row["device"] == "cpu"
    # both ways of reading agree on what workers wrote, too
    direct, via_optuna = frames.load_study(open_reader(real_study.url), study), frames.load_study(open_reader(real_study.url), study, via_optuna=True)
    assert direct.trials.equals(via_optuna.trials) and direct.curves.equals(via_optuna.curves)


@pytest.mark.parametrize("study", ["search", "grid"])
def test_the_curves_are_the_metrics_rows_the_workers_wrote(real_study, study):
    raw = {t._trial_id: t for t in trials_of(real_study.url, study)}
    curves = frames.load_study(open_reader(real_study.url), study).curves
    steps = {int(tid): sorted(int(s) for s in group["step"]) for tid, group in curves.groupby("trial_id")}
    assert steps == steps_by_sql(real_study, study)
    for trial_id, trial in raw.items():
        ran = trial.user_attrs["steps"]
        expected = [s for s in (0, 10, 20, 30) if s <= ran]
        if trial.user_attrs["diverged"]:
            expected = [0]  # stopped between evaluations
        assert steps[trial_id] == expected, trial.number
        if trial.state.name == "COMPLETE" and not trial.user_attrs["diverged"]:
            last = curves[(curves["trial_id"] == trial_id) & (curves["step"] == 30)]["val_loss"]
            assert float(last.iloc[0]) == pytest.approx(trial.value, rel=1e-6)


def test_status_counts_and_ranks_a_search_as_its_trials_say(real_study, capsys):
    raw = trials_of(real_study.url, real_study.search)
    code, out, _ = cli(capsys, "status", "--study", real_study.search, "--storage", real_study.url, "--json")
    assert code == 0
    status = json.loads(out)
    counted = Counter(t.state.name for t in raw)
    assert status["counts"] == {state: counted.get(state, 0) for state in STATES}
    assert status["diverged"] == sum(1 for t in raw if t.user_attrs["diverged"])
    best = best_by_hand(raw)
    assert (status["best"]["number"], status["best"]["value"]) == (best.number, best.value)


def test_status_of_a_grid_gives_per_p_means_and_the_verdicts_differences_computed_by_hand(real_study, capsys):
    raw = trials_of(real_study.url, real_study.grid)
    code, out, _ = cli(capsys, "status", "--study", real_study.grid, "--storage", real_study.url, "--json")
    assert code == 0
    status = json.loads(out)
    assert (status["grid"]["n_cells"], status["grid"]["done"]) == (6, 6)
    loss = {(read_p(t.user_attrs["p"]), t.user_attrs["fold"]): t.value for t in raw}
    per_p = {row["p_bin"]: row for row in status["per_p"]}
    assert list(per_p) == ["1", "2", "∞"]
    for label, p in (("1", 1.0), ("2", 2.0), ("∞", math.inf)):
        values = [loss[p, 0], loss[p, 1]]
        mean, sd = statistics.mean(values), statistics.stdev(values)
        half = T_975[1] * sd / math.sqrt(2)
        row = per_p[label]
        assert row["n"] == 2 and row["mean"] == pytest.approx(mean) and row["std"] == pytest.approx(sd)
        assert math.isfinite(half)  # an interval could be computed, and is not shown: 2 runs (the rule: 3 or more)
        assert (row["ci_low"], row["ci_high"]) == (None, None)
    arms = {read_p(row["value"]): row for row in status["verdicts"]["arms"]}  # the verdicts, as `lpstudy verdict`
    assert set(arms) == {1.0, math.inf}
    for p in (1.0, math.inf):
        diffs = [loss[p, fold] - loss[2.0, fold] for fold in (0, 1)]
        reference = statistics.mean([loss[2.0, 0], loss[2.0, 1]])
        assert arms[p]["n_folds"] == 2
        assert arms[p]["diff"] == pytest.approx(statistics.mean(diffs))
        assert arms[p]["rel_diff"] == pytest.approx(statistics.mean(diffs) / reference)
    code, text, _ = cli(capsys, "status", "--study", real_study.grid, "--storage", real_study.url)
    assert code == 0
    for p in (1.0, 2.0, math.inf):  # each p's mean, as the table prints it
        assert f"{statistics.mean([loss[p, 0], loss[p, 1]]):.4f}" in text, text


@pytest.mark.slow
def test_export_writes_the_best_trial_and_retraining_it_gives_its_loss(real_study, tmp_path, capsys):
    raw = trials_of(real_study.url, real_study.search)
    best = best_by_hand(raw)
    out = tmp_path / "best.yaml"
    code, _, err = cli(capsys, "export", "--study", real_study.search, "--storage", real_study.url, "-o", str(out))
    assert code == 0, err
    exported = yaml.safe_load(out.read_text())
    assert exported["source"]["trial"] == best.number and exported["source"]["value"] == best.value
    assert float(exported["p"]) == read_p(best.user_attrs["p"])  # 'inf' for p = ∞
    assert (exported["lr"], exported["gain_init"]) == (best.user_attrs["lr"], best.user_attrs["gain_init"])
    # what the search fixed for every trial travels too
    assert (exported["grad_clip"], exported["warmup_steps"], exported["divergence_factor"]) == (0.0, 0, 1.2)
    retrained = lpstudy("train", "--config", str(out), "--json", env=lp_env(OMP_NUM_THREADS="2"), cwd=tmp_path)
    assert retrained.returncode == 0, retrained.stderr
    result = json.loads(retrained.stdout)
    assert result["final_val_loss"] == pytest.approx(best.user_attrs["final_val_loss"], rel=1e-6, abs=1e-7)
    # the top 3, best first, as ranked here
    code, text, _ = cli(capsys, "export", "--study", real_study.search, "--storage", real_study.url, "--top", "3")
    ranked = sorted((t for t in raw if t.state.name == "COMPLETE" and not t.user_attrs["diverged"]),
                    key=lambda t: (t.value, t.number))
    assert [run["source"]["trial"] for run in yaml.safe_load(text)["runs"]] == [t.number for t in ranked[:3]]


def test_the_report_of_a_real_study_draws_its_charts(real_study, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, _, err = cli(capsys, "report", "--study", real_study.search, "--storage", real_study.url, "-o", str(out))
    assert code == 0, err
    html = out.read_text()
    for title in ("Final validation loss against p", "Mean final validation loss per p (95 % interval)",
                  "Validation loss curves, coloured by p", "Divergence rate per p (95 % Wilson interval)"):
        assert json.dumps(title)[1:-1] in html, title
    # p = ∞ gets its own tick label on p's axis (plotly writes it raw or \u-escaped, by its JSON encoder)
    assert re.search(r'"ticktext":\[[^\]]*"(∞|\\u221e)"', html)
    assert html.count("Plotly.newPlot") >= 10


def test_divergence_rates_per_p_count_what_the_workers_recorded(real_study):
    from lpstudy.results import analysis as A

    raw = trials_of(real_study.url, real_study.search)
    trials = frames.load_trials(open_reader(real_study.url), real_study.search)
    rates = A.divergence_rates(trials)
    infinite = rates[rates["p_bin"] == "∞"].iloc[0]
    complete_inf = [t for t in raw if t.state.name == "COMPLETE" and math.isinf(read_p(t.user_attrs["p"]))]
    diverged_inf = [t for t in complete_inf if t.user_attrs["diverged"]]
    assert diverged_inf, "the real study's diverged run is at p = ∞"
    assert (infinite["n"], infinite["n_diverged"]) == (len(complete_inf), len(diverged_inf))
    assert infinite["rate"] == pytest.approx(len(diverged_inf) / len(complete_inf))
