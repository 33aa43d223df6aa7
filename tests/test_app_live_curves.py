"""The Trials page draws the running trials' validation curves as their evaluations arrive: read from
storage (the metrics table a worker writes), again at each rerun of its fragment, and only read."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pandas as pd

from lpstudy.study.synthetic import write_synthetic_study
from tests.test_app import drawn_title, run_page

TITLE = "Running now: validation loss against step"


def _live_chart(at) -> dict:
    (spec,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")
               if drawn_title(json.loads(c.proto.spec)) == TITLE]
    return spec


def _drawn(spec: dict) -> dict[int, list[tuple[float, float]]]:
    """{trial number: its (step, validation loss) points} of the chart's validation curves."""
    from tests.test_compute import _plotted

    return {int(t["name"].split()[1]): list(zip(map(float, _plotted(t["x"])), _plotted(t["y"])))
            for t in spec["data"] if t.get("showlegend", True) and t["name"].startswith("trial ")
            and "(training)" not in t["name"]}


def _stored(path, study: str) -> pd.DataFrame:
    with sqlite3.connect(path) as conn:
        return pd.read_sql("SELECT * FROM lpstudy_metrics WHERE study_name = ?", conn, params=[study])


def test_the_trials_page_draws_each_running_trial_and_its_new_evaluations(tmp_path, monkeypatch):
    import optuna

    path = tmp_path / "live.db"
    url = f"sqlite:///{path}"
    write_synthetic_study(url, "live", n_trials=12, n_evals=6, seed=2)  # its last trials: RUNNING
    running = sorted(t.number for t in optuna.load_study(study_name="live", storage=url).trials
                     if t.state == optuna.trial.TrialState.RUNNING)
    assert running
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = run_page("Trials", url, "live")
    assert not at.exception, at.exception
    stored = _stored(path, "live")
    drawn = _drawn(_live_chart(at))
    assert sorted(drawn) == running  # the running trials, and only them
    for number in running:
        own = stored[stored["trial_number"] == number].sort_values("step")
        assert drawn[number] == list(zip(own["step"].astype(float), own["val_loss"])), number

    # a worker stores the next evaluation of the first running trial: the next run of the page (its
    # fragment reruns every few seconds in a browser) draws it
    last = stored[stored["trial_number"] == running[0]].sort_values("step").iloc[[-1]].copy()
    last["step"] += 25
    last["val_loss"] = 1.2345
    if "id" in last:
        last = last.drop(columns=["id"])
    with sqlite3.connect(path) as conn:  # its metrics row, then its intermediate value (the pruner's report)
        last.to_sql("lpstudy_metrics", conn, if_exists="append", index=False)
    trial = next(t for t in optuna.load_study(study_name="live", storage=url).trials if t.number == running[0])
    optuna.storages.RDBStorage(url).set_trial_intermediate_value(trial._trial_id, int(last["step"].iloc[0]), 1.2345)
    import time

    time.sleep(3 * 2 + 1)  # the dashboard checks whether a study changed every 2 s (FINGERPRINT_TTL_S): 3× that
    at.run()
    assert not at.exception, at.exception
    assert _drawn(_live_chart(at))[running[0]][-1] == (float(last["step"].iloc[0]), 1.2345)


def test_a_study_with_no_running_trial_says_where_live_curves_appear(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'done.db'}"
    write_synthetic_study(url, "done", n_trials=6, n_evals=4, seed=3, states=False)  # every trial COMPLETE
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = run_page("Trials", url, "done")
    assert TITLE not in [drawn_title(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]
    assert any(c.value.startswith("No trial is running") for c in at.caption)
