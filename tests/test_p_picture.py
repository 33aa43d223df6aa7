"""What p does, as the charts and the report draw it, unbiased by how the study was run: per-p
curves that a pruner's rung cannot move, parameter importance that ranks p (not the folds, not a
gain derived from p), and p's tuned profile of a search. The studies are hand-made but written
through the worker's own code (tests/written_study.py); every expected number is computed here,
from Optuna's trials and the metrics table read with sqlite3, not by lpstudy."""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict

import numpy as np
import pytest

from lpstudy.results import analysis as A
from lpstudy.results.reading.frames import load_study
from tests.study_helpers import trials_of
from tests.test_analysis import trials_frame
from tests.written_study import record, write_replicate
from lpstudy.db.kinds import open_reader

P_VALUES = [1.0, 2.0, 3.0]
FOLDS = 4
STEPS = (0, 10, 20, 30, 40)
RUNG = 20  # the worst trials' last evaluation: pruned there
WORST_FOLDS = (2, 3)
# the metrics a chart draws per p and step, with the planned value of a good and of a worst run
COLUMNS = ("val_loss", "gain_mean", "max_logit", "min_head_entropy")


def _pruning_plan(cfg):
    """Every run improves slowly; the worst ones (WORST_FOLDS) drift away fast and are pruned at RUNG."""
    fold, p = int(cfg.fold), float(cfg.p)
    worst = fold in WORST_FOLDS
    records = []
    for step in STEPS:
        if worst and step > RUNG:
            break
        drift = step / 10 if worst else 0.0
        records.append(record(step, val_loss=4.0 - step / 40 + 0.05 * fold + 0.1 * p + 0.4 * drift,
                              gain=16.0 + 0.1 * step / 10 + fold * 0.01 + 2.0 * drift,
                              max_logit=5.0 + 0.05 * step / 10 + p + 1.5 * drift,
                              min_head_entropy=2.0 - 0.01 * step / 10 - 0.3 * drift))
    return records, worst


@pytest.fixture(scope="module")
def pruned_study(tmp_path_factory):
    path = tmp_path_factory.mktemp("pruned") / "pruned.db"
    url = f"sqlite:///{path}"
    write_replicate(url, "pruned", P_VALUES, FOLDS, _pruning_plan)
    return url, path


def _metrics_by_sql(path) -> dict[int, dict[int, dict[str, float]]]:
    """trial number -> step -> column -> value, as the worker wrote the metrics table."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT trial_number, step, {', '.join(COLUMNS)} FROM lpstudy_metrics "
                            "WHERE study_name = 'pruned'").fetchall()
    finally:
        conn.close()
    out: dict[int, dict[int, dict[str, float]]] = defaultdict(dict)
    for number, step, *values in rows:
        out[number][step] = dict(zip(COLUMNS, values))
    return out


def _completed_movement(url, path) -> dict[tuple[float, str, int, int], float]:
    """(p, column, step, next step) -> the largest move of one COMPLETE trial of that p between the
    two steps: how much the completed trials themselves move."""
    trials = trials_of(url, "pruned")
    metrics = _metrics_by_sql(path)
    moves: dict[tuple[float, str, int, int], float] = defaultdict(float)
    for trial in trials:
        if trial.state.name != "COMPLETE":
            continue
        p = float(trial.user_attrs["p"])
        for column in COLUMNS:
            for a, b in zip(STEPS, STEPS[1:]):
                moved = abs(metrics[trial.number][b][column] - metrics[trial.number][a][column])
                moves[(p, column, a, b)] = max(moves[(p, column, a, b)], moved)
    return moves


def test_the_study_holds_the_worst_trials_pruned_at_one_rung(pruned_study):
    url, path = pruned_study
    trials = trials_of(url, "pruned")
    pruned = [t for t in trials if t.state.name == "PRUNED"]
    assert len(pruned) == len(P_VALUES) * len(WORST_FOLDS) and len(trials) == len(P_VALUES) * FOLDS
    metrics = _metrics_by_sql(path)
    assert all(max(metrics[t.number]) == RUNG for t in pruned), "the worst trials stop at the rung"


@pytest.mark.parametrize("column", COLUMNS)
def test_no_per_p_aggregate_moves_at_the_rung_more_than_the_completed_trials_move(pruned_study, column):
    """Pruning the worst trials at step 20 leaves the median and its band per p where the
    completed trials take it: between any two steps (at the rung above all) each aggregate moves
    no more than the completed trials of its p move."""
    url, path = pruned_study
    moves = _completed_movement(url, path)
    data = load_study(open_reader(url), "pruned")
    bands = A.curve_cohort(data.curves, data.trials, column).bands
    assert set(bands["p_center"]) == set(P_VALUES)
    for p, group in bands.groupby("p_center"):
        group = group.sort_values("step").set_index("step")
        assert list(group.index) == list(STEPS), (p, list(group.index))
        for a, b in zip(STEPS, STEPS[1:]):
            for stat in ("median", "q25", "q75"):
                moved = abs(group.loc[b, stat] - group.loc[a, stat])
                assert moved <= moves[(p, column, a, b)] + 1e-9, (
                    f"p {p}: the {stat} of {column} moves by {moved:.4f} from step {a} to {b}, the completed "
                    f"trials by at most {moves[(p, column, a, b)]:.4f}")
        assert set(group["n"]) == {FOLDS - len(WORST_FOLDS)}, "one cohort, the same trials at every step"


@pytest.mark.slow
def test_the_report_draws_the_cohort_and_the_pruned_trials_apart(pruned_study):
    """The report's four per-p curve charts: each median line moves no more than its completed trials
    do, the pruned trials are one grey trace outside the median, and the caption names the cohort."""
    from lpstudy.results.report import report_sections

    url, path = pruned_study
    moves = _completed_movement(url, path)
    sections = dict(report_sections(load_study(open_reader(url), "pruned")))
    def titled(section: str, start: str):
        return next(f for f in sections[section] if hasattr(f, "layout") and f.layout.title.text.startswith(start))

    figures = {"val_loss": titled("Convergence", "Median validation loss"),
               "gain_mean": titled("Stability", "Attention gain"),
               "max_logit": titled("Stability lens", "Largest attention logit"),
               "min_head_entropy": titled("Stability lens", "Smallest head entropy")}
    n_pruned = len(P_VALUES) * len(WORST_FOLDS)
    cohort = FOLDS - len(WORST_FOLDS)  # per p
    for column, fig in figures.items():
        names = [trace.name for trace in fig.data if trace.name]
        assert f"not in the median ({n_pruned})" in names, (column, names)
        medians = {trace.name: trace for trace in fig.data if trace.name and trace.name.startswith("p ")}
        assert sorted(medians) == [f"p {A.format_p(p)} (n = {cohort})" for p in P_VALUES], (column, sorted(medians))
        for p in P_VALUES:
            trace = medians[f"p {A.format_p(p)} (n = {cohort})"]
            ys = dict(zip(trace.x, trace.y))
            for a, b in zip(STEPS, STEPS[1:]):
                assert abs(ys[b] - ys[a]) <= moves[(p, column, a, b)] + 1e-9, (column, p, a, b)
        text = " ".join(note.text for note in fig.layout.annotations).replace("<br>", " ")
        assert f"the {len(P_VALUES) * cohort} trials that reached step {STEPS[-1]}" in text, text
        assert f"{n_pruned} that stopped earlier ({n_pruned} pruned)" in text, text


# --- importance ----------------------------------------------------------------------------------

IMPORTANCE_P = [1.0, 2.0, 3.0, 4.0]
IMPORTANCE_FOLDS = 8  # 32 runs: enough for an importance (analysis.importance.MIN_TRIALS)
FOLD_EFFECT = tuple(0.1 * fold for fold in range(IMPORTANCE_FOLDS))  # far larger than p's effect: easy and hard folds


def _p_only(p: float, fold: int) -> float:
    """The final loss: a function of p alone, plus the fold's offset and a little deterministic noise."""
    noise = 0.002 * (((int(p * 2) * 7 + fold * 3) % 5) / 5 - 0.4)
    return 1.6 + 0.04 * (p - 3.0) ** 2 + FOLD_EFFECT[fold] + noise


@pytest.mark.slow  # the importance of a replicate written on disk: 3.5 s
def test_importance_ranks_p_first_on_a_matched_replicate_whose_folds_differ_a_lot(tmp_path):
    """A matched-gain replicate where the loss depends on p only: p is ranked first; fold (a blocking
    factor) and gain_init (derived from p) are left out, saying why; within folds, p's share is what
    the two-way analysis of variance says it explains."""
    url = f"sqlite:///{tmp_path / 'matched.db'}"

    def plan(cfg):
        final = _p_only(float(cfg.p), int(cfg.fold))
        return [record(0, 4.17), record(10, final)], False

    write_replicate(url, "matched", IMPORTANCE_P, IMPORTANCE_FOLDS, plan, fixed={"gain_init": "matched"})
    data = load_study(open_reader(url), "matched")
    assert data.trials["gain_init"].nunique() == len(IMPORTANCE_P)  # the matched gain varies with p
    importance = A.param_importance(data.trials, data.info.spec)
    assert importance.shares.index[0] == "p", importance.shares
    assert "fold" not in importance.shares and "gain_init" not in importance.shares, importance.shares
    assert "blocking factor" in importance.left_out["fold"]
    assert "derived from p" in importance.left_out["gain_init"]
    assert importance.adjusted_for == ("fold",)
    caption = importance.caption()
    assert "within each fold" in caption and "fold (a blocking factor" in caption and "gain_init (derived from p" in caption

    # the oracle: two-way ANOVA (p × fold, one run per cell) from Optuna's trials
    values = {(float(t.user_attrs["p"]), t.user_attrs["fold"]): t.value for t in trials_of(url, "matched")}
    grand = sum(values.values()) / len(values)
    p_means = {p: sum(values[(p, f)] for f in range(IMPORTANCE_FOLDS)) / IMPORTANCE_FOLDS for p in IMPORTANCE_P}
    fold_means = {f: sum(values[(p, f)] for p in IMPORTANCE_P) / len(IMPORTANCE_P) for f in range(IMPORTANCE_FOLDS)}
    ss_p = IMPORTANCE_FOLDS * sum((m - grand) ** 2 for m in p_means.values())
    ss_residual = sum((v - p_means[p] - fold_means[f] + grand) ** 2 for (p, f), v in values.items())
    assert importance.shares["p"] == pytest.approx(ss_p / (ss_p + ss_residual), rel=1e-9)
    assert importance.shares["p"] > 0.9 > importance.null


# --- the tuned profile ---------------------------------------------------------------------------

def test_the_tuned_profile_gives_the_best_loss_the_expected_best_of_m_and_the_count_per_p_bin():
    rows = [{"p": 1.0, "value": 1.50}, {"p": 1.3, "value": 1.40}, {"p": 1.8, "value": 1.70},
            {"p": 2.2, "value": 1.45}, {"p": 2.4, "value": 1.60},
            {"p": 1.2, "value": 1.00, "state": "PRUNED"},  # stopped early: never its group's best
            {"p": 3.0, "value": 4.17, "diverged": True},  # diverged: no loss to count
            {"p": 3.1, "value": 1.30}, {"p": 4.0, "value": 1.35},
            {"p": math.inf, "value": 1.55}]
    profile = A.tuned_profile(trials_frame(rows), bins=[1.0, 2.5, 4.0]).set_index("p_bin")
    assert list(profile.index) == ["1–2.5", "2.5–4", "∞"]
    first, second, inf = profile.loc["1–2.5"], profile.loc["2.5–4"], profile.loc["∞"]
    assert (first["n"], first["best"], first["best_trial"], first["n_top"]) == (5, 1.40, 1, 3)
    assert first["top_mean"] == pytest.approx((1.40 + 1.45 + 1.50) / 3)
    assert (second["n"], second["best"], second["best_trial"], second["n_top"]) == (2, 1.30, 7, 0)
    assert math.isnan(second["top_mean"]) and math.isnan(inf["top_mean"])  # no "mean of the 3 lowest" of 2 or 1
    assert (inf["n"], inf["best"], inf["n_top"]) == (1, 1.55, 0)
    # every group at m = 2, the smallest group of two or more; ∞'s one run has its best found and no
    # "expected best of 1 run" (which was only the group's mean, read as a best)
    from lpstudy.results.analysis.best_of_m import expected_best_of_m

    assert set(profile["m"]) == {2}
    assert first["expected_best"] == pytest.approx(expected_best_of_m(np.sort([1.50, 1.40, 1.70, 1.45, 1.60]), 2))
    assert second["expected_best"] == pytest.approx(expected_best_of_m(np.sort([1.30, 1.35]), 2))
    assert math.isnan(inf["expected_best"])
