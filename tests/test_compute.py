"""Compute a study has spent (lpstudy.results.reading.compute): steps and device time of every trial,
pruned, failed and running ones included, what pruning saved, the best value against compute, and
where pruned trials stopped; on a hand-made frame whose sums are written out here, then through
`lpstudy status` and the dashboard (AppTest) on a study written as the service writes it, with the
expected figures read from Optuna's own trials."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest

from lpstudy.results.reading.compute import best_against_compute, compute_summary, pruned_stops
from lpstudy.study.synthetic import EVAL_INTERVAL, TOKENS_PER_S, write_synthetic_study
from lpstudy.values import format_duration
from tests.study_helpers import cli

T0 = datetime(2026, 1, 1, 12, 0, 0)
NAN = float("nan")


def _hand_made() -> pd.DataFrame:
    """Seven trials; the end times put trial 4 before trial 3."""
    rows = [  # number, state, value, steps, wall_time_s, duration_s, last_step, device, diverged, ends (min)
        (0, "COMPLETE", 2.0, 100, 50.0, 51.0, 100, "cpu", False, 1),
        (1, "PRUNED", 2.5, 20, 5.0, 6.0, 20, "cuda:0", False, 2),
        (2, "COMPLETE", 1.8, 60, 30.0, 31.0, 60, "cpu", True, 3),  # diverged: never the best
        (3, "FAIL", NAN, NAN, NAN, 10.0, 40, "cuda:0", False, 5),  # no summary: its last step, its duration
        (4, "COMPLETE", 1.9, 100, 20.0, 21.0, 100, "cuda:1", False, 4),
        (5, "RUNNING", NAN, NAN, NAN, NAN, 30, "cpu", False, None),
        (6, "WAITING", NAN, NAN, NAN, NAN, NAN, None, False, None),
    ]
    frame = pd.DataFrame(rows, columns=["number", "state", "value", "steps", "wall_time_s", "duration_s",
                                        "last_step", "device", "diverged", "ends"])
    frame["max_steps"] = 100
    frame["datetime_complete"] = [T0 + timedelta(minutes=m) if m == m and m is not None else pd.NaT
                                  for m in frame.pop("ends")]
    return frame


def test_compute_counts_every_trial_that_ran_and_what_pruning_saved():
    spent = compute_summary(_hand_made())
    assert spent["trials"] == 6  # the waiting one spent nothing
    assert spent["steps"] == 100 + 20 + 60 + 40 + 100 + 30
    assert spent["steps_by_state"] == {"COMPLETE": 260, "PRUNED": 20, "FAIL": 40, "RUNNING": 30}
    # paces (s/step) of the trials with a time: 0.5, 0.25, 0.5, 0.25, 0.2 -> median 0.25, so the
    # running trial's 30 steps count 7.5 s
    assert spent["cpu_s"] == pytest.approx(50 + 30 + 30 * 0.25)
    assert spent["gpu_s"] == pytest.approx(5 + 10 + 20)
    assert spent["pruned"] == 1 and spent["saved_steps"] == 80
    assert spent["saved_s"] == pytest.approx(80 * 5.0 / 20)  # at the pruned trial's own pace
    assert spent["saved_share"] == pytest.approx(80 / (350 + 80))


def test_best_value_against_compute_follows_the_order_trials_finished_in():
    frame = best_against_compute(_hand_made())
    assert frame["number"].tolist() == [0, 1, 2, 4, 3]
    assert frame["cumulative_steps"].tolist() == [100, 120, 180, 280, 320]
    assert frame["cumulative_s"].tolist() == pytest.approx([50, 55, 85, 105, 115])
    assert frame["best_value"].tolist() == [2.0, 2.0, 2.0, 1.9, 1.9]  # 1.8 diverged, 2.5 pruned


def test_a_pruned_trial_is_marked_at_its_last_evaluation():
    trials = _hand_made()
    curves = pd.DataFrame({"trial_number": [0, 0, 1, 1, 1, 5], "step": [0, 100, 0, 10, 20, 30],
                           "val_loss": [4.0, 2.0, 4.0, 3.0, 2.5, 3.1]})
    stops = pruned_stops(curves.sample(frac=1.0, random_state=3), trials)
    assert stops.to_dict(orient="records") == [{"trial_number": 1, "step": 20, "val_loss": 2.5}]


def test_nothing_spent_yet():
    empty = _hand_made().iloc[0:0]
    assert compute_summary(empty)["steps"] == 0 and compute_summary(empty)["saved_share"] == 0.0
    assert best_against_compute(empty).empty


# -- a study as the service writes it: `lpstudy status` and the dashboard ----------------------------

N_EVALS = 6
MAX_STEPS = N_EVALS * EVAL_INTERVAL
PACE = 2048 / TOKENS_PER_S  # the synthetic runs' seconds per step


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[str, dict]:
    """A search of 16 trials in every state, half of them on cuda:0; the figures expected, from
    Optuna's own trials: a trial's steps are its summary's, else its last intermediate step."""
    url = f"sqlite:///{tmp_path_factory.mktemp('compute') / 'study.db'}"
    write_synthetic_study(url, "spent", n_trials=16, n_evals=N_EVALS, seed=2, now=T0)
    trials = optuna.load_study(study_name="spent", storage=url).get_trials(deepcopy=False)
    ran = [t for t in trials if t.state.name != "WAITING"]
    steps = {t.number: t.user_attrs.get("steps", max(t.intermediate_values, default=0)) for t in ran}
    gpu = {t.number for t in ran if t.user_attrs["device"] != "cpu"}
    pruned = [t for t in ran if t.state.name == "PRUNED"]
    best = min(t.value for t in ran if t.state.name == "COMPLETE" and not t.user_attrs.get("diverged"))
    spent = sum(steps.values())
    saved = sum(MAX_STEPS - steps[t.number] for t in pruned)
    expected = {"steps": spent, "trials": len(ran), "pruned": len(pruned), "saved": saved,
                "cpu_s": PACE * sum(s for n, s in steps.items() if n not in gpu),
                "gpu_s": PACE * sum(s for n, s in steps.items() if n in gpu),
                "share": saved / (spent + saved), "best": best,
                "finished_s": PACE * sum(steps[t.number] for t in ran if t.state.name != "RUNNING"),
                "stops": sorted((t.number, max(t.intermediate_values)) for t in pruned if t.intermediate_values)}
    assert expected["pruned"] and gpu and expected["saved"]  # the study has what the tests look at
    return url, expected


@pytest.mark.slow
def test_status_says_what_the_trials_spent_and_what_pruning_saved(study, capsys):
    url, want = study
    code, out, err = cli(capsys, "status", "--study", "spent", "--storage", url)
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("compute"))
    assert (f"{want['steps']:,} steps by {want['trials']} trial(s) · CPU {format_duration(want['cpu_s'])} · "
            f"GPU {format_duration(want['gpu_s'])}") in line
    assert (f"pruning saved {want['saved']:,} steps ({want['share']:.0%} of running every trial to its end"
            in line and f"in {want['pruned']} pruned trial(s)" in line)
    code, out, _ = cli(capsys, "status", "--study", "spent", "--storage", url, "--json")
    spent = json.loads(out)["compute"]
    assert (spent["steps"], spent["saved_steps"], spent["pruned"]) == (want["steps"], want["saved"], want["pruned"])
    assert spent["cpu_s"] == pytest.approx(want["cpu_s"], rel=1e-4)
    assert spent["gpu_s"] == pytest.approx(want["gpu_s"], rel=1e-4)


def _page(url: str, page: str | None, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from common import STUDY_KEY

    app = Path(__file__).resolve().parents[1] / "app"
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = AppTest.from_file(str(app / "dashboard.py"), default_timeout=60)
    at.session_state[STUDY_KEY] = "spent"
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _plotted(values) -> list:
    """A trace's values as the page got them (Plotly sends numeric arrays base64-encoded)."""
    import base64

    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return list(values)


def _figures(at) -> dict[str, dict]:
    from tests.test_app import drawn_title

    return {drawn_title(json.loads(c.proto.spec)): json.loads(c.proto.spec)
            for c in at.get("plotly_chart")}


@pytest.mark.slow
def test_home_shows_compute_and_the_best_value_against_it(study, monkeypatch):
    url, want = study
    monkeypatch.delenv("LPSTUDY_DASHBOARD_STUDY", raising=False)
    at = _page(url, None, monkeypatch)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steps trained"] == f"{want['steps']:,}"
    assert metrics["CPU time"] == format_duration(want["cpu_s"])
    assert metrics["GPU time"] == format_duration(want["gpu_s"])
    assert metrics["Saved by pruning"] == f"{want['share']:.0%}"
    figure = _figures(at)["Best value so far against compute spent"]
    best = next(t for t in figure["data"] if t.get("name") == "best so far")
    ys, xs = _plotted(best["y"]), _plotted(best["x"])
    assert ys[-1] == pytest.approx(want["best"])
    finite = [y for y in ys if y == y]
    assert finite == sorted(finite, reverse=True)  # it only ever goes down
    # every finished trial's compute, the running ones' not yet; under 2 minutes: in seconds
    assert xs == sorted(xs) and xs[-1] == pytest.approx(want["finished_s"], rel=1e-4) and want["finished_s"] < 120
    assert "seconds" in figure["layout"]["xaxis"]["title"]["text"]
    pruned = next(t for t in figure["data"] if t.get("name") == "pruned")
    assert len(_plotted(pruned["x"])) == want["pruned"]


@pytest.mark.slow
def test_convergence_marks_pruned_trials_where_they_stopped(study, monkeypatch):
    url, want = study
    monkeypatch.delenv("LPSTUDY_DASHBOARD_STUDY", raising=False)
    at = _page(url, "views/convergence.py", monkeypatch)
    figure = _figures(at)["Validation loss curves, coloured by p"]
    marks = next(t for t in figure["data"] if str(t.get("name", "")).startswith("pruned"))
    numbers = [int(text.split()[1]) for text in marks["text"]]
    assert sorted(zip(numbers, _plotted(marks["x"]))) == want["stops"]
    assert all(step < MAX_STEPS for _, step in want["stops"])
    assert np.all(np.isfinite(_plotted(marks["y"])))
