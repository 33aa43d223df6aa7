"""Reading a big study with SQL doing the work (lpstudy.db.study_queries, lpstudy.results.reading.summary,
lpstudy.results.rows.trial_table, lpstudy.results.analysis.curve_sample): the exact numbers stay exact. Each
answer is compared with an independent computation over Optuna's own API (every trial read, the
best-trial rule written out here), on a study real workers ran and on hand-made ones, on SQLite and
PostgreSQL."""

from __future__ import annotations

import math
from datetime import datetime

import optuna
import numpy as np
import pandas as pd
import pytest

from lpstudy.results.reading import frames
from lpstudy.results.reading.compute import compute_summary
from lpstudy.results.export import export_text
from lpstudy.results.status import study_status
from lpstudy.results.reading.summary import study_summary
from lpstudy.study.synthetic import write_synthetic_study
from tests.study_helpers import TINY, cli
from lpstudy.db.kinds import open_reader

NOW = datetime(2026, 1, 1, 12, 0, 0)


def independent(url: str, name: str) -> dict:
    """What the readers must say, from Optuna's API and the rule of lpstudy.design.best written out."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trials = optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)
    counts = {s: sum(t.state.name == s for t in trials) for s in ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")}
    candidates = [t for t in trials if t.state.name == "COMPLETE" and t.value is not None
                  and math.isfinite(t.value) and not t.user_attrs.get("diverged")]
    ranked = sorted(candidates, key=lambda t: (t.value, t.number))
    durations = [(t.datetime_complete - t.datetime_start).total_seconds() for t in trials
                 if t.state.name == "COMPLETE" and t.datetime_start and t.datetime_complete]
    return {"counts": counts, "ranked": [t.number for t in ranked], "best_value": ranked[0].value if ranked else None,
            "diverged": sum(t.state.name == "COMPLETE" and bool(t.user_attrs.get("diverged")) for t in trials),
            "running": sorted(t.number for t in trials if t.state.name == "RUNNING"), "n": len(trials),
            "mean_s": sum(durations) / len(durations) if durations else None}


def check_reads(url: str, name: str) -> None:
    want = independent(url, name)
    status = study_status(open_reader(url), name)
    assert status["counts"] == want["counts"]
    assert status["diverged"] == want["diverged"]
    assert status["best"]["number"] == want["ranked"][0] and status["best"]["value"] == want["best_value"]
    assert sorted(r["number"] for r in status["running"]) == want["running"]
    top = min(3, len(want["ranked"]))
    exported = yaml_runs(export_text(open_reader(url), name, top_k=top))
    assert [run["source"]["trial"] for run in exported] == want["ranked"][:top]
    info = next(i for i in frames.study_infos(open_reader(url)) if i.name == name)
    assert (info.n_trials, info.best_value) == (want["n"], want["best_value"])
    fast = frames.load_study(open_reader(url), name)
    slow = frames.load_study(open_reader(url), name, via_optuna=True)  # Optuna's API, every attribute decoded one by one
    pd.testing.assert_frame_equal(fast.trials, slow.trials, check_exact=True)
    summary = study_summary(open_reader(url), name)  # the compute line: summed in SQL, last steps only where needed
    assert_same_compute(summary.compute, compute_summary(slow.trials))
    if fast.curve_note is None:
        pd.testing.assert_frame_equal(fast.curves, slow.curves, check_exact=True)


def assert_same_compute(from_sql: dict, from_frame: dict) -> None:
    """The compute summary summed in SQL is the one of the frame: counts and steps exactly, seconds to
    rounding (SQL adds in another order; SQLite's julianday keeps times to about 0.1 ms)."""
    assert from_sql.keys() == from_frame.keys()
    for key, want in from_frame.items():
        if isinstance(want, float):
            assert from_sql[key] == pytest.approx(want, rel=1e-9, abs=1e-3), key
        else:
            assert from_sql[key] == want, key


def yaml_runs(text: str) -> list[dict]:
    import yaml

    body = yaml.safe_load(text)
    return body["runs"] if "runs" in body else [body]


def test_status_export_chooser_and_frames_from_sql_match_optunas_api_on_a_real_study(empty_url, capsys):
    url = empty_url
    code, _, err = cli(capsys, "create", "--study", "real", "--storage", url, "--preset", "smoke",
                       "--sampler-seed", "3", "--spread-trials", "0", "--race", "0", *TINY)  # 4 trials, all sampled, none raced
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "real", "--storage", url, "--devices", "cpu", "--no-progress",
                       "--n-trials", "4")
    assert code == 0, err
    assert independent(url, "real")["n"] == 4
    check_reads(url, "real")


@pytest.mark.slow
def test_status_export_chooser_and_frames_from_sql_match_optunas_api_on_hand_made_studies(empty_url):
    url = empty_url
    write_synthetic_study(url, "made", n_trials=60, n_evals=5, seed=11, now=NOW)  # every state, p = ∞, diverged
    write_synthetic_study(url, "other", n_trials=12, n_evals=3, seed=12, now=NOW)
    write_synthetic_study(url, "lost", n_trials=10, n_evals=3, seed=13, all_diverged=True, now=NOW)
    check_reads(url, "made")
    check_reads(url, "other")
    want = independent(url, "made")
    assert study_summary(open_reader(url), "made").mean_complete_s == pytest.approx(want["mean_s"], rel=1e-9)
    lost = next(i for i in frames.study_infos(open_reader(url)) if i.name == "lost")
    assert lost.n_trials == 10 and lost.best_value is None  # every run diverged: nothing can be best
    assert study_status(open_reader(url), "lost")["best"] is None


def test_a_tie_goes_to_the_earlier_trial_and_a_diverged_run_is_never_best(sqlite_url):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    write_synthetic_study(sqlite_url, "ties", n_trials=10, n_evals=3, seed=1, states=False, now=NOW)
    study = optuna.load_study(study_name="ties", storage=sqlite_url)
    low = min(t.value for t in study.trials)
    for attrs in ({"diverged": True}, {"diverged": False}, {"diverged": None}, {}):  # numbers 10, 11, 12, 13
        trial = study.ask()
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        study.tell(trial, low - 1.0 if attrs.get("diverged") else low - 0.5)
    assert study_status(open_reader(sqlite_url), "ties")["best"]["number"] == 11  # 10 diverged; 11, 12 and 13 tie
    assert [r["source"]["trial"] for r in yaml_runs(export_text(open_reader(sqlite_url), "ties", top_k=3))] == [11, 12, 13]


@pytest.mark.slow
def test_a_big_study_reads_the_curves_of_a_sample_and_says_so(sqlite_url, monkeypatch):
    from lpstudy.results.analysis import curve_sample

    monkeypatch.setattr(curve_sample, "CURVE_TRIALS_ALL", 20)
    monkeypatch.setattr(curve_sample, "PER_GROUP", 3)
    write_synthetic_study(sqlite_url, "big", n_trials=80, n_evals=4, seed=5, now=NOW)
    sampled = frames.load_study(open_reader(sqlite_url), "big")
    full = frames.load_study(open_reader(sqlite_url), "big", via_optuna=True)
    pd.testing.assert_frame_equal(sampled.trials, full.trials, check_exact=True)  # every trial, still
    drawn = set(sampled.curves["trial_number"])
    assert 3 <= len(drawn) < 80
    expected = full.curves[full.curves["trial_number"].isin(drawn)].reset_index(drop=True)
    pd.testing.assert_frame_equal(sampled.curves, expected, check_exact=True)  # the sample's curves, whole
    trials = full.trials
    best = trials[(trials["state"] == "COMPLETE") & ~trials["diverged"]].sort_values(["value", "number"]).iloc[0]
    running = set(trials.loc[trials["state"] == "RUNNING", "number"])
    assert int(best["number"]) in drawn and running <= drawn
    finite = trials[(trials["state"] != "WAITING") & trials["p"].map(math.isfinite)]
    from lpstudy.results.analysis.groups import default_p_groups

    edges = np.asarray(default_p_groups(trials, full.info.spec), dtype="float64")  # the bins the charts open with
    group = pd.Series(np.clip(np.searchsorted(edges, finite["p"], side="right") - 1, 0, len(edges) - 2),
                      index=finite.index)  # each trial's bin, written out
    per_group = finite[finite["number"].isin(drawn - running - {int(best["number"])})].groupby(group).size()
    assert per_group.max() <= 3
    assert sampled.curve_note.startswith(f"Curves of a sample of {len(drawn)} of {int((trials['state'] != 'WAITING').sum())} trials")
    assert "use every trial" in sampled.curve_note
    one = frames.trial_curves(open_reader(sqlite_url), "big", [int(best["number"])])
    pd.testing.assert_frame_equal(one, full.curves[full.curves["trial_number"] == best["number"]].reset_index(drop=True),
                                  check_exact=True)


@pytest.mark.slow
def test_a_live_study_read_again_incrementally_equals_a_full_read(empty_url):
    """The dashboard's copy of a live study (lpstudy.results.reading.live_study) reads only the trials that were
    unfinished and the new ones; after trials changed state and new ones arrived it equals a full read,
    and a full read through Optuna's API."""
    from lpstudy.results.reading.live_study import LiveStudy

    url = empty_url
    write_synthetic_study(url, "live", n_trials=40, n_evals=4, seed=21, now=NOW)  # RUNNING, WAITING, every state
    live = LiveStudy(open_reader(url), "live")
    first = live.read()
    assert live.last_read == ("full", 40)
    pd.testing.assert_frame_equal(first.trials, frames.load_study(open_reader(url), "live").trials, check_exact=True)
    study = optuna.load_study(study_name="live", storage=url)
    before = {t.number: t.state.name for t in study.get_trials(deepcopy=False)}
    running = [n for n, s in before.items() if s == "RUNNING"]
    waiting = [n for n, s in before.items() if s == "WAITING"]
    assert len(running) >= 2 and waiting
    assert live.read().trials.equals(first.trials) and live.last_read == ("incremental", len(running) + len(waiting))

    ids = {t.number: t._trial_id for t in study.get_trials(deepcopy=False)}
    storage = study._storage
    storage.set_trial_user_attr(ids[running[0]], "steps", 999)  # a running trial goes on, then completes
    storage.set_trial_intermediate_value(ids[running[0]], 999, 0.25)
    study.tell(running[0], 1.5)
    study.tell(running[1], state=optuna.trial.TrialState.FAIL)  # another fails
    claimed = study.ask()  # a waiting cell is claimed: RUNNING now, with its parameters
    assert claimed.number == waiting[0]
    claimed.report(2.0, step=7)
    fresh = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-2, log=True)})  # a new trial
    fresh.set_user_attr("p", 3.5)
    study.tell(fresh, 0.125)
    study.enqueue_trial({"p": 1.25, "lr": 1e-3})  # a new waiting cell
    changed = live.read()
    n_open = len(running) + len(waiting)
    assert live.last_read == ("incremental", n_open + 2)
    full = frames.load_study(open_reader(url), "live")
    pd.testing.assert_frame_equal(changed.trials, full.trials, check_exact=True)
    pd.testing.assert_frame_equal(changed.curves, full.curves, check_exact=True)
    pd.testing.assert_frame_equal(changed.trials, frames.load_study(open_reader(url), "live", via_optuna=True).trials,
                                  check_exact=True)
    row = changed.trials.set_index("number")
    assert row.loc[running[0], "state"] == "COMPLETE" and row.loc[running[0], "value"] == 1.5
    assert row.loc[running[0], "last_step"] == 999 and row.loc[running[0], "steps"] == 999
    assert row.loc[running[1], "state"] == "FAIL" and row.loc[waiting[0], "state"] == "RUNNING"
    assert row.loc[fresh.number, "p"] == 3.5 and len(changed.trials) == 42
    live.read()  # the trials finished by now are no longer read
    assert live.last_read == ("incremental", n_open - 2 + 1)


def test_create_adds_the_read_indexes_and_the_summed_attributes_index_carries_their_values(empty_url, capsys):
    import sqlalchemy as sa

    from lpstudy.db.read_indexes import READ_INDEXES, SUMMED_ATTRIBUTES

    url = empty_url
    backend = sa.engine.make_url(url).get_backend_name()
    code, _, err = cli(capsys, "create", "--study", "indexed", "--storage", url, "--preset", "smoke", *TINY)
    assert code == 0, err
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if backend == "sqlite":
                sql = dict(conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'index'")).all())
            else:
                sql = dict(conn.execute(sa.text("SELECT indexname, indexdef FROM pg_indexes")).all())
    finally:
        engine.dispose()
    assert set(READ_INDEXES) <= set(sql)
    summed = sql["lpstudy_trial_user_attributes_summed"]
    carried = "INCLUDE (value_json)" if backend == "postgresql" else "(key, trial_id, value_json)"
    assert carried in summed, summed  # the values are read from the index, not the table
    assert all(f"'{key}'" in summed for key in SUMMED_ATTRIBUTES), summed  # partial: those keys only


def test_export_read_with_sql_equals_the_export_read_through_optuna(empty_url):
    from lpstudy.results import export

    url = empty_url
    write_synthetic_study(url, "made", n_trials=16, n_evals=4, seed=21, now=NOW)  # 2 of 10 completed diverged
    reader = open_reader(url)
    spec, chosen = export.chosen_trials(reader, "made", 3)
    optuna_spec, through_optuna = export.chosen_trials(reader.through_optuna(), "made", 3)
    assert spec == optuna_spec and [t.number for t in chosen] == [t.number for t in through_optuna]
    for mine, theirs in zip(chosen, through_optuna):
        assert export.run_file_text(mine, spec, "made") == export.run_file_text(theirs, spec, "made")
        assert mine.user_attrs == theirs.user_attrs and mine.value == theirs.value


@pytest.mark.slow
def test_status_reads_many_running_trials_a_chunk_of_ids_at_a_time(sqlite_url, monkeypatch):
    from lpstudy.db import study_queries as Q

    write_synthetic_study(sqlite_url, "made", n_trials=30, n_evals=3, seed=8, now=NOW)
    want = independent(sqlite_url, "made")
    monkeypatch.setattr(Q, "IDS_PER_QUERY", 1)  # each trial id a query of its own
    status = study_status(open_reader(sqlite_url), "made")
    assert sorted(r["number"] for r in status["running"]) == want["running"] and len(want["running"]) >= 2
    assert status["best"]["number"] == want["ranked"][0]
