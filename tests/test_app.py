"""The Streamlit pages under Streamlit's AppTest: every page renders on a seeded study with its
charts, the controls change what is shown, the export is what `lpstudy export` writes and retrains
with `lpstudy train --config`, the app never writes, and an empty, unreachable, unfinished or
all-diverged study gets a message instead of a traceback."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from common import STUDY_KEY
from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.values import read_p
from tests.study_helpers import SEEDED_AT, best_by_hand, trials_of
from lpstudy.db.kinds import open_reader

APP = Path(__file__).resolve().parents[1] / "app"
PAGES = {
    "Home": "views/home.py",
    "Effect of p": "views/effect_of_p.py",
    "Convergence": "views/convergence.py",
    "Stability": "views/stability.py",
    "Stability lens": "views/lens.py",
    "Compare": "views/compare.py",
    "Trials": "views/trials.py",
    "Export": "views/export.py",
}
TITLES = {
    "Home": {"Trials by state", "Optimisation history"},
    "Effect of p": {"Final validation loss against p", "Mean final validation loss per p (95 % interval)",
                    "Validation loss over p × learning rate", "Parameter importance (type II sums of squares)"},
    "Convergence": {"Runs that reached validation loss 2 (Kaplan–Meier, 95 % interval)",
                    "Validation loss curves, coloured by p", "Training loss curves, coloured by p",
                    "Median validation loss per p", "Steps to reach validation loss 2",
                    "Area under the validation curve against p"},
    "Stability": {"Divergence rate per p (95 % Wilson interval)", "Divergence rate over p × learning rate",
                  "Largest gradient norm against p", "Attention gain over training, per p (median)"},  # + spread_title
    "Stability lens": {"Final loss against learning rate per p (95 % interval)",
                       "LR sensitivity per p (Wortsman et al. 2023; 95 % CI)",
                       "Largest attention logit per p (median)",
                       "Smallest head entropy per p (median)",
                       "Attention entropy at initialisation against p, sampled gains"},
    "Compare": set(),  # no comparison in the seeded database: a message, checked below
    "Trials": set(),  # the trial's own charts, checked below
    "Export": set(),
}
NOW = SEEDED_AT  # the seeded study's clock (the `seeded` fixture, tests/conftest.py)


def spread_title(storage: str, study: str) -> str:
    """The Stability page's spread chart's title by its rule, for a search: each configuration (its
    sampled parameters but the fold) counted once among the completed runs that did not diverge, and
    how many runs they made; read here from Optuna's trials rather than from lpstudy."""
    done = [t for t in trials_of(storage, study) if t.state.name == "COMPLETE" and not t.user_attrs.get("diverged")]
    configurations = {tuple(sorted((k, v) for k, v in t.params.items() if k != "fold")) for t in done}
    return (f"Spread of final validation loss across configurations ({len(configurations)} configurations of "
            f"{len(done)} runs, each counted once), per p")


def titles(page: str, storage: str, study: str) -> set[str]:
    """The chart titles a page must draw for a search study."""
    return TITLES[page] | ({spread_title(storage, study)} if page == "Stability" else set())


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def run_page(page: str, storage: str, study: str | None = None, monkeypatch=None) -> AppTest:
    os.environ["LPSTUDY_STORAGE"] = storage
    at = AppTest.from_file(str(APP / "dashboard.py"), default_timeout=60)
    if study:
        at.session_state[STUDY_KEY] = study
    at.run()
    if page != "Home":
        at.switch_page(PAGES[page]).run()
    return at


@pytest.fixture(autouse=True)
def _storage_env(monkeypatch):
    monkeypatch.setenv("LPSTUDY_STORAGE", "")  # recorded, so that what a test sets is undone after it
    monkeypatch.delenv("LPSTUDY_STORAGE")
    monkeypatch.delenv("LPSTUDY_DASHBOARD_STUDY", raising=False)
    yield


def chart_titles(at: AppTest) -> list[str]:
    return [drawn_title(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]


def drawn_title(spec: dict) -> str:
    """A chart's title as one line: the page wraps a long one into lines (app/common.py: fitted_title)."""
    return spec["layout"]["title"]["text"].replace(" <br>", " ")


def messages(at: AppTest) -> dict[str, list[str]]:
    return {"error": [e.value for e in at.error], "warning": [w.value for w in at.warning],
            "info": [i.value for i in at.info], "exception": [e.value for e in at.exception]}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_a_search_study_with_its_charts(seeded, page):
    url, _ = seeded
    at = run_page(page, url, "search")
    shown = messages(at)
    assert not shown["exception"] and not shown["error"], shown
    assert titles(page, url, "search") <= set(chart_titles(at))
    assert at.sidebar.selectbox[0].value == "search"
    # a page that groups the search's runs by p says they mix p with the lr and gain they drew
    mixed = [i for i in shown["info"] if i.startswith("Each p group here mixes p with the learning rate and gain")]
    assert len(mixed) == (page in ("Convergence", "Stability", "Stability lens")), shown["info"]


@pytest.mark.slow
def test_no_page_changes_the_study_that_every_page_shares(seeded):
    """The pages share one copy of the study without copying it (common._cached_study_version is a
    cache_resource): after every page has drawn both studies, that copy still equals a fresh read."""
    import common
    from lpstudy.results.reading.frames import load_study

    url, _ = seeded
    for study in ("search", "grid"):
        for page in PAGES:
            assert not run_page(page, url, study).exception, (study, page)
        for curves in (True, False):
            shared = common.cached_study(url, study, curves=curves)
            fresh = load_study(open_reader(url), study, curves=curves)
            pd.testing.assert_frame_equal(shared.trials, fresh.trials, check_exact=True)
            pd.testing.assert_frame_equal(shared.curves, fresh.curves, check_exact=True)
            assert common.cached_study(url, study, curves=curves) is shared  # shared, not a copy


@pytest.mark.slow
def test_a_revisit_of_an_unchanged_study_draws_the_same_charts_without_computing_them(seeded, monkeypatch):
    """common.once: each chart is computed once per version of the study and its settings, then every
    visit draws the kept one (at 100,000 trials computing them took 0.3-0.8 s a page). The charts a
    revisit draws are those of the first visit, and no chart function runs again; other settings
    (p bins) compute their own. That a changed study is drawn anew: test_home_follows_a_running_study."""
    from lpstudy.results.charts import compute, convergence, effect, lens, stability, trials

    url, _ = seeded
    pages = ["Home", "Effect of p", "Convergence", "Stability", "Stability lens"]
    first = {page: [c.proto.spec for c in run_page(page, url, "search").get("plotly_chart")] for page in pages}
    calls: list[str] = []
    for module in (trials, effect, convergence, stability, compute, lens):
        for name in dir(module):
            function = getattr(module, name)
            if name.endswith("_chart") or name in {"loss_vs_p", "loss_map", "divergence_map", "loss_curves",
                                                    "median_curves", "mean_loss_per_p"}:
                def counted(*args, _name=name, _function=function, **kwargs):
                    calls.append(_name)
                    return _function(*args, **kwargs)

                monkeypatch.setattr(module, name, counted)
    for page in pages:
        again = run_page(page, url, "search")
        assert not again.exception, (page, again.exception)
        assert [c.proto.spec for c in again.get("plotly_chart")] == first[page], page
    assert calls == []
    at = run_page("Stability", url, "search")
    at.slider(key="stability_bins").set_value(3).run()  # new settings: their own charts
    assert not at.exception
    assert {"divergence_rate_chart", "divergence_map", "spread_chart"} <= set(calls)


def test_the_study_read_ahead_at_start_is_the_copy_the_first_page_draws(seeded, capsys, monkeypatch):
    """lpstudy dashboard starts app/read_ahead.py with the server: the study the chooser opens first
    is read into the pages' copy before anyone asks, and its parameter importance into the cache
    Effect of p draws from; the first page then reads nothing (the study is unchanged) and computes
    no importance."""
    import common
    import lpstudy.results.analysis as analysis
    from read_ahead import read_ahead

    url, _ = seeded
    common.live_study.clear()
    common._cached_study_version.clear()  # no version drawn before: the page must read
    common.cached_importance.clear()
    read_ahead(url, wait_for_runtime=False).join(timeout=60)
    first = common.cached_study_infos(url)[0].name  # the chooser's first study, opened without a choice
    n = len(trials_of(url, first))
    assert f"read study {first!r} ahead of the first visitor: {n} trials in" in capsys.readouterr().err
    assert common.live_study(url, first).last_read == ("full", n)  # one read, the importance included
    time.sleep(common.FINGERPRINT_TTL_S + 0.5)  # the page checks the study's fingerprint anew: unchanged
    at = run_page("Home", url)
    assert not at.exception and at.sidebar.selectbox[0].value == first
    assert common.live_study(url, first).last_read == ("full", n)  # the page read nothing more

    def not_again(*args, **kwargs):
        raise AssertionError("parameter importance computed again")

    monkeypatch.setattr(analysis, "param_importance", not_again)
    at = run_page("Effect of p", url)
    assert not at.exception, at.exception
    # a replicate (the first study here) shows p's share within folds; a search the parameter importance
    expected = ("What the compared field explains within folds" if common.cached_study_infos(url)[0].kind == "replicate"
                else "Parameter importance")
    assert any(title.startswith(expected) for title in chart_titles(at)), chart_titles(at)


def test_the_read_ahead_of_a_search_fits_the_surrogate_that_effect_of_p_draws(seeded, capsys, monkeypatch):
    """Effect of p opens a search with p's surrogate profile (lpstudy.results.answers.search), whose
    fit is its longest part on a large search: the read-ahead fits it into what the pages keep with
    the study's version, so the first visit fits nothing and draws the profile."""
    import common
    from lpstudy.results.answers import surrogate
    from read_ahead import read_ahead

    fits: list[str] = []
    fit = surrogate._fit

    def counted(*args, **kwargs):
        fits.append(threading.current_thread().name)
        return fit(*args, **kwargs)

    monkeypatch.setattr(surrogate, "_fit", counted)
    url, _ = seeded
    common.live_study.clear()
    common._cached_study_version.clear()  # no version kept before: nothing fitted yet
    read_ahead(url, "search", wait_for_runtime=False).join(timeout=60)
    assert "p's surrogate profile in" in capsys.readouterr().err
    assert fits and set(fits) == {"lpstudy-read-ahead"}, fits  # fitted ahead, in the read-ahead's thread
    ahead = len(fits)
    at = run_page("Effect of p", url, "search")
    assert not at.exception, at.exception
    assert len(fits) == ahead, fits  # the page fitted nothing: it drew the fit kept for this version
    assert "p's effect with lr and gain held apart (surrogate, 95 % band)" in chart_titles(at)


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_what_real_workers_wrote(real_study, page):
    for study in (real_study.search, real_study.grid):
        at = run_page(page, real_study.url, study)
        shown = messages(at)
        assert not shown["exception"] and not shown["error"], (study, shown)
        if study == real_study.search:  # a search draws every chart a seeded search does (its bands and
            drawn = chart_titles(at)    # default threshold, in a title's tail, depend on the data)
            for title in titles(page, real_study.url, study):
                stem = title.split(" (")[0].rstrip(" 0123456789.")
                assert any(d.startswith(stem) for d in drawn), (title, drawn)
        no_missing_cells(at)


@pytest.mark.slow
def test_home_and_trials_count_a_real_search_as_optuna_holds_it(real_study):
    raw = trials_of(real_study.url, real_study.search)
    home = run_page("Home", real_study.url, real_study.search)
    assert {m.label: m.value for m in home.metric}["Trials"] == str(len(raw))
    at = run_page("Trials", real_study.url, real_study.search)
    assert len(at.dataframe[0].value) == len(raw)
    at.radio(key="diverged_filter").set_value("yes").run()
    shown = at.dataframe[0].value
    assert sorted(int(n) for n in shown["number"]) == sorted(t.number for t in raw if t.user_attrs["diverged"])


def test_home_shows_states_best_trial_workers_and_a_refresh_toggle(seeded):
    url, _ = seeded
    at = run_page("Home", url, "search")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Trials"] == "40" and metrics["Running"] == "2" and metrics["Waiting"] == "1"
    assert any(label.startswith("Final validation loss") for label in metrics)
    assert at.toggle[0].label == "Refresh while the study runs" and at.toggle[0].value is False
    running = at.table[0].value
    assert len(running) == 2 and {"worker", "running for"} <= set(running.columns)
    at.toggle[0].set_value(True).run()
    assert not at.exception


@pytest.mark.slow
def test_home_follows_a_running_study(tmp_path):
    import time

    import optuna

    from common import FINGERPRINT_TTL_S

    url = f"sqlite:///{tmp_path / 'live.db'}"
    write_synthetic_study(url, "live", n_trials=12, n_evals=6, seed=5, now=NOW)
    at = run_page("Home", url, "live")
    assert {m.label: m.value for m in at.metric}["Running"] == "2"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.load_study(study_name="live", storage=url).ask()  # a worker takes the waiting trial
    time.sleep(FINGERPRINT_TTL_S + 0.2)
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Running"], metrics["Waiting"], metrics["Trials"]) == ("3", "0", "12")


def test_a_replicate_study_shows_grid_progress_and_the_verdicts(seeded):
    url, _ = seeded
    home = run_page("Home", url, "grid")
    assert not home.exception
    assert any("Grid:" in str(p.proto) for p in home.get("progress"))
    effect = run_page("Effect of p", url, "grid")
    titles = chart_titles(effect)
    assert "Verdict per arm: difference to the reference" in titles
    assert "Validation loss over p × fold" in titles
    # p's measured share within folds, and no importance bar of the one field a replicate varies
    assert "What the compared field explains within folds (partial ω²)" in titles
    assert not any(t.startswith("Parameter importance") for t in titles), titles
    verdicts = effect.table[0].value
    assert list(verdicts["arm"]) == ["p = 2", "p = 1", "p = 1.5", "p = 2.5", "p = 3", "p = 3.5", "p = 4"]
    assert verdicts["verdict"].iloc[0] == "reference"
    assert set(verdicts["verdict"].iloc[1:]) <= {"better", "equivalent", "worse", "undecided"}
    # folds still to run: an interim reading, no verdict at full alpha (no peeking)
    assert any(m.value.startswith("**Verdict.** Interim reading, 1 to 4 of the 4 runs per arm (") for m in effect.markdown)
    effect.selectbox(key="reference_p").set_value(3.0).run()  # another reference p
    assert effect.table[0].value["arm"].iloc[0] == "p = 3"
    effect.text_input(key="rope").set_value("20%").run()  # a ROPE of ±20 %: stated; still interim, so undecided
    shown = effect.table[0].value.iloc[1:]
    assert set(shown["verdict"]) == {"undecided"}
    assert any("ROPE ±20 % of the reference's mean loss" in c.value for c in effect.caption)
    effect.text_input(key="rope").set_value("0").run()  # refused in one line, the ROPE it ran with kept
    assert any("--rope 0 must be above 0" in e.value for e in effect.error)


def test_the_threshold_control_sets_steps_to_reach(seeded):
    url, _ = seeded
    at = run_page("Convergence", url, "search")
    at.number_input[0].set_value(1.8).run()
    assert "Steps to reach validation loss 1.8" in chart_titles(at)


def test_the_convergence_page_gives_verdicts_under_a_replicate_and_the_caveat_under_a_search(seeded):
    url, _ = seeded
    grid = run_page("Convergence", url, "grid")
    assert not messages(grid)["exception"], messages(grid)
    assert any(m.value.startswith("**Convergence.**") and ("reaches it" in m.value or "undecided" in m.value)
               for m in grid.markdown)
    titles = chart_titles(grid)
    assert "Steps to the threshold: difference to the reference" in titles
    assert any(t.startswith("Runs that reached validation loss") for t in titles)
    assert grid.table[0].value.columns[1] == "endpoint"  # the verdict table, as `lpstudy verdict` prints it
    search = run_page("Convergence", url, "search")
    assert any("mixes p with the learning rate and gain its runs drew" in m for m in messages(search)["info"])
    # said once, above the charts: no chart caption repeats that a search's groups mix p with lr and gain
    captions = [a.get("text", "").replace("<br>", " ") for c in search.get("plotly_chart")
                for a in json.loads(c.proto.spec)["layout"].get("annotations", [])]
    assert captions and not [c for c in captions if "learning rate and gain" in c or "mix p with" in c], captions


def test_trials_table_filters_and_one_trials_detail(seeded):
    url, _ = seeded
    at = run_page("Trials", url, "search")
    table = at.dataframe[0].value
    assert len(table) == 40
    at.radio(key="diverged_filter").set_value("yes").run()
    diverged = at.dataframe[0].value
    assert 0 < len(diverged) < 40 and (diverged["diverged"] == "yes").all()
    at.multiselect(key="state_filter").set_value(["RUNNING"]).run()
    at.radio(key="diverged_filter").set_value("any").run()
    assert set(at.dataframe[0].value["state"]) == {"RUNNING"}
    number = at.selectbox(key="trial_number").value
    assert f"Trial {number}: loss curves" in chart_titles(at)


@pytest.mark.slow
def test_export_offers_the_best_trial_as_a_run_file_and_it_retrains(seeded, tmp_path, corpus_path):
    url, _ = seeded
    at = run_page("Export", url, "search")
    assert not at.exception and not at.error
    text = at.code[0].value + "\n"  # st.code shows the download's text without its final newline
    assert at.code[1].value == "lpstudy train --config search-best.yaml"
    exported = yaml.safe_load(text)
    best = best_by_hand(trials_of(url, "search"))
    assert exported["source"]["study"] == "search" and exported["source"]["trial"] == best.number
    assert exported["source"]["value"] == best.value and exported["preset"] == "smoke"
    for name in ("p", "lr", "gain_init"):
        assert float(exported[name]) == float(best.user_attrs[name]), name
    run_file = tmp_path / "search-best.yaml"
    run_file.write_text(text)
    done = subprocess.run([sys.executable, "-m", "lpstudy", "train", "--config", str(run_file), "--json",
                           "--device", "cpu"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "LPSTUDY_DATA": str(corpus_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    trained = json.loads(done.stdout)
    assert trained["preset"] == "smoke"
    for name in ("p", "lr", "gain_init", "fold", "seed"):
        assert trained["config"][name] == pytest.approx(exported[name]), name
    at.radio[0].set_value("json").run()
    assert json.loads(at.code[0].value)["p"] == pytest.approx(exported["p"])


@pytest.mark.slow
def test_the_app_never_writes_to_the_database(seeded):
    url, path = seeded
    before = digest(path)
    for page in PAGES:
        for study in ("search", "grid"):
            assert not run_page(page, url, study).exception
    assert digest(path) == before


@pytest.mark.slow
def test_an_empty_database_says_how_to_start_on_every_page(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'empty.db'}"
    storage = optuna.storages.RDBStorage(url)  # Optuna's tables, no study
    storage.engine.dispose()
    for page in PAGES:
        shown = messages(run_page(page, url))
        assert not shown["exception"] and not shown["error"]
        assert any("holds no study yet" in m and "lpstudy search" in m for m in shown["info"]), (page, shown)


@pytest.mark.slow
@pytest.mark.parametrize("storage, expected", [
    ("sqlite:///{tmp}/missing.db", "no study database at"),
    ("postgresql+psycopg://reader:s3cret@127.0.0.1:1/lpstudy", "cannot read the study database"),
])
def test_a_database_that_cannot_be_reached_gets_an_error_not_a_traceback(tmp_path, storage, expected):
    url = storage.format(tmp=tmp_path)
    for page in PAGES:
        shown = messages(run_page(page, url))
        assert not shown["exception"]
        assert len(shown["error"]) == 1 and expected in shown["error"][0], (page, shown)
        assert "s3cret" not in shown["error"][0]
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.slow
def test_a_study_without_a_completed_trial_says_so(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'waiting.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=url, study_name="fresh")
    study.enqueue_trial({"p": 2.0})
    trial = study.ask()  # runs the enqueued trial
    study.enqueue_trial({"p": 4.0})  # and one waits
    trial.set_user_attr("p", 3.0)
    trial.report(3.9, 25)
    for page in PAGES:
        shown = messages(run_page(page, url))
        assert not shown["exception"] and not shown["error"], (page, shown)
        if page not in ("Trials", "Compare"):  # Compare shows comparisons, not the chosen study
            assert any("No trial has completed yet (1 running, 1 waiting)" in m for m in shown["info"]), (page, shown)


@pytest.mark.slow
def test_a_study_without_trials_says_how_to_start_its_workers(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'new.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=url, study_name="newborn")
    for page in PAGES:
        if page == "Compare":  # Compare shows comparisons, not the chosen study
            continue
        shown = messages(run_page(page, url))
        assert not shown["exception"] and not shown["error"], (page, shown)
        assert any("lpstudy worker --study newborn --storage URL" in m for m in shown["info"]), (page, shown)


@pytest.mark.slow
def test_a_study_where_every_run_diverged_warns_and_still_shows_where(tmp_path):
    url = f"sqlite:///{tmp_path / 'diverged.db'}"
    write_synthetic_study(url, "hot", n_trials=12, n_evals=6, all_diverged=True, now=NOW)
    for page in PAGES:
        at = run_page(page, url)
        shown = messages(at)
        assert not shown["exception"] and not shown["error"], (page, shown)
        if page not in ("Trials", "Compare"):  # Compare shows comparisons, not the chosen study
            assert any("Every completed trial diverged" in m for m in shown["warning"]), (page, shown)
        if page == "Stability":
            assert "Divergence rate per p (95 % Wilson interval)" in chart_titles(at)


# --- read at a glance ----------------------------------------------------------------------------

def figures(at: AppTest) -> dict[str, dict]:
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        out[drawn_title(spec)] = spec
    return out


def displayed(frame):
    """A table as the page draws it: the display text its Styler gives (the values underneath stay
    numbers, for sorting), else its values."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    text = frame.proto.arrow_data.styler.display_values
    return convert_arrow_bytes_to_pandas_df(text) if text else frame.value


def no_missing_cells(at: AppTest) -> None:
    for frame in [*at.dataframe, *at.table]:
        shown = displayed(frame)
        if shown.isna().to_numpy().any():  # the grid draws a missing number as its placeholder
            assert frame.proto.placeholder == "–", frame.value
            shown = shown.astype(object).where(shown.notna(), "–")
        cells = [str(c) for c in shown.to_numpy().ravel()]
        assert not {"None", "nan", "NaN", "NaT", "<NA>"} & set(cells), frame.value
        assert not any(re.search(r"days \d\d:\d\d:\d\d", c) for c in cells)  # no raw timedelta text


@pytest.fixture(scope="module")
def few(tmp_path_factory) -> str:
    """A small search: 8 trials, so a few distinct p values, some close together."""
    url = f"sqlite:///{tmp_path_factory.mktemp('few') / 'few.db'}"
    write_synthetic_study(url, "few", n_trials=8, n_evals=6, seed=5, now=NOW, include_inf=False)
    return url


def _ticks_apart(spec: dict) -> None:
    """Tick labels far enough apart not to print over each other: at most 13, spaced ≥ 1/13 of the axis."""
    axis = spec["layout"]["xaxis"]
    values = [v for v in axis["tickvals"]]
    assert 2 <= len(values) <= 13 and len(set(axis["ticktext"])) == len(values)
    gaps = [b - a for a, b in zip(values, values[1:])]
    assert min(gaps) >= (values[-1] - values[0]) / 13, axis


@pytest.mark.parametrize("study_fixture", ["few", "seeded"])
def test_effect_of_p_bins_a_search_labels_every_mean_with_n_and_has_the_p_bins_slider(study_fixture, request):
    url = request.getfixturevalue(study_fixture)
    url, name = (url, "few") if study_fixture == "few" else (url[0], "search")
    at = run_page("Effect of p", url, name)
    assert not at.exception
    slider = at.sidebar.slider(key="effect_bins")
    assert slider.label == "p bins" and not slider.disabled
    mean = figures(at)["Mean final validation loss per p (95 % interval)"]
    (trace,) = mean["data"]
    n = json.loads(at.table[0].value.to_json())["runs without divergence"]  # "Numbers per p"
    counts = [int(k) for k in n.values()]
    assert trace["mode"] == ("markers+lines+text" if min(counts) >= 3 else "markers+text")  # no line without intervals
    assert trace["text"] == [f"n = {k}" if k < 3 else "" for k in counts], (trace["text"], n)  # no interval under 3
    assert trace["error_y"]["visible"]
    assert len(trace["x"]) <= slider.value + 1  # binned: at most the bins (and ∞)
    _ticks_apart(mean)
    no_missing_cells(at)
    slider.set_value(3).run()
    assert len(figures(at)["Mean final validation loss per p (95 % interval)"]["data"][0]["x"]) <= 4


def test_a_grid_keeps_its_p_values_and_offers_to_bin_them(seeded):
    url, _ = seeded
    at = run_page("Effect of p", url, "grid")
    assert at.sidebar.slider(key="effect_bins").disabled  # the exact values fit: they are the default
    mean = figures(at)["Mean final validation loss per p (95 % interval)"]
    assert mean["layout"]["xaxis"]["ticktext"] == ["1", "1.5", "2", "2.5", "3", "3.5", "4"]
    at.sidebar.toggle(key="effect_bins_on").set_value(True).run()
    assert not at.sidebar.slider(key="effect_bins").disabled


def test_stability_draws_rates_as_points_log_ticks_and_bands_that_do_not_merge(seeded, few):
    url, _ = seeded
    at = run_page("Stability", url, "search")
    figs = figures(at)
    (rate,) = figs["Divergence rate per p (95 % Wilson interval)"]["data"]
    assert rate["type"] == "scatter" and rate["mode"] == "markers" and rate["error_y"]["visible"]
    grad = figs["Largest gradient norm against p"]["layout"]["yaxis"]
    assert grad["type"] == "log"
    assert all(re.fullmatch(r"(1|2|5)(0*)|0\.0*(1|2|5)|([25]×)?10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", t) for t in grad["ticktext"]), \
        grad["ticktext"]
    assert len(set(grad["ticktext"])) == len(grad["ticktext"])
    gain = next(f for t, f in figs.items() if t.startswith("Attention gain over training"))
    medians = [d for d in gain["data"] if d.get("name", "").startswith("p ")]
    fills = [d for d in gain["data"] if d.get("fill") == "toself"]
    assert len(medians) > 4 and not fills  # many groups: medians alone, no cloud of bands
    assert len({d["line"]["color"] for d in medians}) == len(medians)
    no_missing_cells(at)
    at = run_page("Stability", few, "few")
    gain = next(f for t, f in figures(at).items() if t.startswith("Attention gain over training"))
    medians = [d for d in gain["data"] if d.get("name", "").startswith("p ")]
    sizes = [int(re.search(r"n = (\d+)", d["name"]).group(1)) for d in medians]
    drawn = any(d.get("fill") == "toself" for d in gain["data"])
    assert drawn == (min(sizes) >= 3), sizes  # a few groups keep their bands, where each holds 3 runs to band
    no_missing_cells(at)


def test_convergence_gives_each_p_group_its_own_colour(seeded):
    url, _ = seeded
    at = run_page("Convergence", url, "search")
    median = next(f for t, f in figures(at).items() if t.startswith("Median validation loss per p"))
    lines = [d for d in median["data"] if d.get("name", "").startswith("p ")]
    colours = [d["line"]["color"] for d in lines]
    assert 4 < len(lines) <= 10 and len(set(colours)) == len(colours)
    assert set(colours) <= {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                            "#7f7f7f", "#bcbd22", "#17becf"}


def test_trials_small_panels_have_legends_and_step_axes_and_no_none_cells(seeded):
    url, _ = seeded
    at = run_page("Trials", url, "search")
    no_missing_cells(at)
    number = at.selectbox(key="trial_number").value
    dynamics = figures(at)[f"Trial {number}: gradient, learning rate and gain"]
    layout = dynamics["layout"]
    assert layout["showlegend"] is True
    assert all(layout[f"xaxis{i}"]["title"]["text"] == "step" for i in ("", "2", "3"))
    panel1 = [d for d in dynamics["data"] if d.get("xaxis", "x") == "x"]
    assert len(panel1) == 2 and all(d["name"] for d in panel1)


@pytest.mark.slow
def test_home_shows_running_durations_as_minutes_and_seconds(tmp_path):
    url = f"sqlite:///{tmp_path / 'now.db'}"
    write_synthetic_study(url, "now", n_trials=12, n_evals=6, seed=5)  # trials started minutes ago
    at = run_page("Home", url, "now")
    running = at.table[0].value["running for"].tolist()
    assert running and all(re.fullmatch(r"\d+ s|\d+ min( \d+ s)?", v) for v in running), running
    no_missing_cells(at)


def plotted(values) -> list:
    """A trace's values as the page got them (Plotly sends numeric arrays base64-encoded)."""
    import base64

    import numpy as np

    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return list(values)


@pytest.mark.slow
def test_the_stability_lens_draws_the_medians_of_what_real_workers_recorded(real_study):
    """The lens on the real grid (p ∈ {1, 2, ∞}, 2 folds): its largest-logit curves are, per p and
    step, the median of the two folds' max_logit, computed here from the metrics table."""
    import sqlite3
    import statistics

    at = run_page("Stability lens", real_study.url, real_study.grid)
    assert not at.exception and not at.error
    no_missing_cells(at)
    logits = next(f for t, f in figures(at).items() if t.startswith("Largest attention logit per p"))
    drawn = {trace["name"].split(" (n = ")[0]: dict(zip(plotted(trace["x"]), plotted(trace["y"])))  # "p 2 (n = 2)"
             for trace in logits["data"] if trace.get("name", "").startswith("p ")}
    p_of = {t._trial_id: read_p(t.user_attrs["p"]) for t in trials_of(real_study.url, real_study.grid)}
    conn = sqlite3.connect(f"file:{real_study.path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT trial_id, step, max_logit FROM lpstudy_metrics WHERE study_name = ?",
                            (real_study.grid,)).fetchall()
    finally:
        conn.close()
    by_p_step: dict[tuple[float, int], list[float]] = {}
    for trial_id, step, value in rows:
        by_p_step.setdefault((p_of[trial_id], step), []).append(value)
    expected = {f"p {label}": {step: statistics.median(v) for (p, step), v in by_p_step.items() if p == value}
                for label, value in (("1", 1.0), ("2", 2.0), ("∞", math.inf))}
    assert set(drawn) == set(expected)
    for name, points in expected.items():
        assert sorted(drawn[name]) == sorted(points) == [0, 10, 20, 30], name
        assert [drawn[name][s] for s in sorted(points)] == pytest.approx([points[s] for s in sorted(points)]), name
    # one learning rate: the loss-against-lr chart has one point per p
    curve = figures(at)["Final loss against learning rate per p"]  # 2 folds a point: no interval, none named
    assert sorted(len(plotted(t["x"])) for t in curve["data"] if t.get("name", "").startswith("p ")) == [1, 1, 1]


@pytest.mark.slow
def test_the_compare_page_draws_the_verdicts_of_a_comparison(seeded, tmp_path):
    import optuna

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.compare import create_compare, make_plan

    url, _ = seeded
    empty = run_page("Compare", url, "search")
    assert any("no comparison" in m for m in messages(empty)["info"])

    compare_url = f"sqlite:///{tmp_path / 'compare.db'}"  # a comparison whose arms have replicated
    plan = make_plan("p", ["1", "2"], ["lr"], budget=3, folds=3, preset="smoke")
    create_compare(open_storage(compare_url, create_tables=True), "cmp", plan)
    for p in (1.0, 2.0):
        write_synthetic_study(compare_url, f"cmp:p={p:g}:folds", kind="replicate", p_values=[p], folds=3,
                              n_evals=4, seed=3, states=False, include_inf=False, now=NOW)
    at = run_page("Compare", compare_url, "cmp")
    ran = sum(len(optuna.load_study(study_name=s.study_name, storage=compare_url).trials)
              for s in optuna.get_all_study_summaries(compare_url) if s.study_name.startswith("cmp:"))
    assert ran > 0 and f"cmp (compare) · {ran} trials" in at.sidebar.selectbox[0].options  # its arms' trials
    shown = messages(at)
    assert not shown["exception"] and not shown["error"], shown
    # each arm's verdict drawn once (in nats, its share of the reference's loss in the hover), not again in %
    assert chart_titles(at) == ["Equal-budget comparison: difference to the reference p = 2 (verdict's interval)"]
    from lpstudy.results.tables.verdicts import VERDICT_COLOURS

    verdict_traces = [t for t in figures(at)[chart_titles(at)[0]]["data"] if t.get("name") in VERDICT_COLOURS]
    assert sum("p = 1" in (t.get("x") or []) for t in verdict_traces) == 1
    verdicts = at.table[1].value
    assert list(verdicts["arm"]) == ["p = 2", "p = 1"] and verdicts["verdict"].iloc[0] == "reference"
    assert [m.value for m in at.markdown if m.value.startswith(  # the table's plain words above it
        "In plain words: this compares the final validation loss of p = 1 with p = 2 (the reference), each arm's "
        "best configuration after its own tuning")]
    # by hand: the mean over folds of loss(p = 1) − loss(p = 2), folds where either run diverged left out
    loss = {}
    for p in (1, 2):
        for t in optuna.load_study(study_name=f"cmp:p={p}:folds", storage=compare_url).trials:
            loss[p, t.user_attrs["fold"]] = None if t.user_attrs.get("diverged") else t.value
    diffs = [loss[1, f] - loss[2, f] for f in range(3) if loss[1, f] is not None and loss[2, f] is not None]
    assert len(diffs) == 3
    assert float(verdicts["diff"].iloc[1]) == pytest.approx(sum(diffs) / 3, rel=1e-3, abs=1e-4)
    no_missing_cells(at)


STAGED_REF = [2.80, 2.90, 2.70, 2.85, 2.75, 2.80, 2.95, 2.72, 2.83, 2.78]  # p = 2's loss on each of 10 folds
STAGED_LOSSES = {  # the folds each arm ran: an arm decided at the first look (3 folds) ran no more
    "p=2": STAGED_REF,
    "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(STAGED_REF[:3])],  # 0.07 % above p = 2: equivalent (ROPE ±5 %)
    "p=3": [v + d for v, d in zip(STAGED_REF, [0.3, -0.25, 0.28, -0.2, 0.3, -0.1, 0.25, -0.3, 0.2, -0.27])],  # ±10 %: never decided
    "p=4": [v - 0.28 - 0.0005 * i for i, v in enumerate(STAGED_REF[:3])],  # 10 % below p = 2: better
}


def test_the_compare_page_shows_the_stages_of_a_comparison_run_until_decided(tmp_path):
    """K = 10 in stages of 3, 5, 8, 10 folds, ROPE ±5 %: p = 1 (0.07 % above p = 2 on every fold) is
    equivalent and p = 4 (10 % below) better at the first look, and run no more folds; p = 3 (±10 %
    fold by fold) is undecided at every look and runs all 10: 40 − 26 = 14 fold runs saved. Each look
    spends alpha by Lan & DeMets' O'Brien–Fleming function, 2 − 2Φ(z₀.₉₇₅ / √(n / 10))."""
    from scipy.stats import norm

    from tests.staged_studies import write_staged_compare

    url = f"sqlite:///{tmp_path / 'staged.db'}"
    write_staged_compare(url, "cmp", STAGED_LOSSES, max_folds=10, rounds=[3, 5, 8, 10], rope=0.05)
    at = run_page("Compare", url, "cmp")
    shown = messages(at)
    assert not shown["exception"] and not shown["error"], shown
    assert [h.value for h in at.subheader][-1] == "Stages"
    captions = [c.value for c in at.caption]
    assert "stages of 3/5/8/10 folds · 4 of 4 over · 14 of 40 fold runs saved against --max-folds 10" in captions
    assert "arms: p = 1: equivalent (3 folds), p = 3: undecided (10 folds), p = 4: better (3 folds)" in captions
    stages = next(frame.value for frame in at.table if "look" in frame.value.columns)
    assert stages["look"].tolist() == [1, 2, 3, 4] and stages["folds run"].tolist() == [3, 5, 8, 10]
    assert stages[["p = 1", "p = 3", "p = 4"]].values.tolist() == [
        ["equivalent", "undecided", "better"],
        ["stopped (equivalent)", "undecided", "stopped (better)"],
        ["stopped (equivalent)", "undecided", "stopped (better)"],
        ["stopped (equivalent)", "undecided", "stopped (better)"]]
    # spent at the corrected variance's information fraction (1/10 + 1/9) / (1/n + 1/9)
    spent = [2 - 2 * norm.cdf(norm.ppf(0.975) / math.sqrt((0.1 + 1 / 9) / (1 / n + 1 / 9))) for n in (3, 5, 8, 10)]
    assert stages["alpha so far"].tolist() == pytest.approx(spent, rel=1e-9)
    assert stages["alpha this look"].tolist() == pytest.approx([spent[0], *(b - a for a, b in zip(spent, spent[1:]))], rel=1e-9)
    assert stages["alpha so far"].iloc[-1] == pytest.approx(0.05)
    # the chart: each arm at each look it was tested at, coloured by its verdict there, at its relative difference
    chart = figures(at)["Stages: each arm's difference to the reference at every look"]
    points = {trace["name"]: list(zip(*trace["x"], trace["y"])) for trace in chart["data"] if trace.get("name") and trace.get("x")}
    ref_mean = sum(STAGED_REF) / 10
    relative = lambda arm, n: 100 * sum(a - b for a, b in zip(STAGED_LOSSES[arm][:n], STAGED_REF)) / n / ref_mean  # noqa: E731
    assert [(x, look) for x, look, _ in points["better"]] == [("p = 4", "3 folds")]
    assert [(x, look) for x, look, _ in points["equivalent"]] == [("p = 1", "3 folds")]
    assert [(x, look) for x, look, _ in points["undecided"]] == [("p = 3", f"{n} folds") for n in (3, 5, 8, 10)]
    assert points["better"][0][2] == pytest.approx(relative("p=4", 3))
    assert [y for *_, y in points["undecided"]] == pytest.approx([relative("p=3", n) for n in (3, 5, 8, 10)])
    # an arm's bar at its last look is its bar on the verdict chart (there in nats: here in % of p = 2's mean)
    last = next(t for t in chart["data"] if t.get("name") == "undecided")["error_y"]
    verdict = next(t for t in figures(at)["Equal-budget comparison: difference to the reference p = 2 (verdict's "
                                          "interval)"]["data"] if t.get("name") == "undecided")["error_y"]
    assert (last["array"][-1], last["arrayminus"][-1]) == pytest.approx(
        (100 * verdict["array"][0] / ref_mean, 100 * verdict["arrayminus"][0] / ref_mean), rel=1e-6)
    no_missing_cells(at)


def test_effect_of_p_and_the_report_show_the_stages_of_a_replicate_run_until_decided(tmp_path):
    """K = 6 in stages of 3, 5, 6 with a ROPE of ±5 %: p = 1 (0.07 % above p = 2 on each fold) is
    equivalent at the first look and ran 3 folds; p = 4 (±10 % fold by fold) runs all 6, undecided.
    The page reads the verdicts with the ROPE the study ran with (as lpstudy verdict), draws the
    stages chart where the report does, and both give the stages table."""
    from lpstudy.results.reading.frames import load_study
    from lpstudy.results.report import report_sections
    from tests.staged_studies import write_staged_replicate

    ref = [2.80, 2.90, 2.70, 2.85, 2.75, 2.80]
    url = f"sqlite:///{tmp_path / 'seq.db'}"
    write_staged_replicate(url, "seq", {2.0: ref, 1.0: [v + 0.002 + 0.0001 * i for i, v in enumerate(ref[:3])],
                                        4.0: [v + d for v, d in zip(ref, [0.3, -0.25, 0.28, -0.2, 0.3, -0.1])]},
                           max_folds=6, rounds=[3, 5, 6], rope=0.05)
    at = run_page("Effect of p", url, "seq")
    assert not messages(at)["exception"], messages(at)
    assert at.text_input(key="rope").value == "5%"  # the ROPE it ran with (a plan from before ROPEs in nats)
    assert any(c.value.startswith("Verdicts against the reference · ROPE ±5 % of the reference's mean loss")
               for c in at.caption)
    stages = next(frame.value for frame in at.table if "look" in frame.value.columns)
    assert stages[["look", "folds run", "p = 1", "p = 4"]].values.tolist() == [
        [1, 3, "equivalent", "undecided"], [2, 5, "stopped (equivalent)", "undecided"],
        [3, 6, "stopped (equivalent)", "undecided"]]
    sections = dict(report_sections(load_study(open_reader(url), "seq")))
    effect = sections["Effect of p"]
    drawn = [item.layout.title.text for item in effect if hasattr(item, "layout")]
    assert "Stages: each arm's difference to the reference at every look" in drawn
    assert chart_titles(at) == drawn  # the page and the report: the same charts, in the same order
    tables = [item for item in effect if isinstance(item, pd.DataFrame) and "look" in item.columns]
    assert len(tables) == 1 and tables[0][["p = 1", "p = 4"]].values.tolist() == stages[["p = 1", "p = 4"]].values.tolist()


def test_the_chooser_shows_each_studys_trials_and_best_value(seeded):
    url, _ = seeded
    at = run_page("Home", url, "search")
    labels = at.sidebar.selectbox[0].options
    assert labels == ["grid (replicate) · 28 trials", "search · 40 trials"], labels  # short: the sidebar is narrow
    assert max(map(len, labels)) <= 32, labels
    captions = [unescaped(c.value) for c in at.sidebar.caption]
    assert "search · 40 trials" in captions and not any("lowest loss" in c for c in captions), captions
    # its best, as Home shows it (tests/test_one_best.py): not one trial's value


def unescaped(markdown: str) -> str:
    """Text that common.plain escaped for markdown, as the page shows it."""
    return re.sub(r"\\(.)", r"\1", markdown)


@pytest.mark.parametrize("how", ["query", "command line"])
def test_a_mistyped_study_name_gets_a_page_that_says_so_with_the_closest_names(seeded, how, monkeypatch):
    url, _ = seeded
    os.environ["LPSTUDY_STORAGE"] = url
    at = AppTest.from_file(str(APP / "dashboard.py"), default_timeout=60)
    if how == "query":
        at.query_params["study"] = "serach"
    else:
        monkeypatch.setenv("LPSTUDY_DASHBOARD_STUDY", "serach")
    at.run()
    errors = [unescaped(e.value) for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("no study named 'serach'"), errors
    assert "did you mean 'search'?" in errors[0], errors
    assert not at.get("plotly_chart") and not at.dataframe and not at.table  # not another study's page
    assert at.sidebar.selectbox[0].value is None
    assert any("?study=search" in m.value for m in at.markdown), [m.value for m in at.markdown]
    at.sidebar.selectbox[0].set_value("search").run()  # choosing one opens it
    assert not at.error and at.session_state[STUDY_KEY] == "search" and at.get("plotly_chart")


@pytest.mark.slow
def test_the_trials_table_pages_sorts_numbers_as_numbers_and_offers_the_filtered_csv(tmp_path):
    url = f"sqlite:///{tmp_path / 'paged.db'}"
    write_synthetic_study(url, "paged", n_trials=130, n_evals=2, seed=4, now=NOW)
    at = run_page("Trials", url, "paged")
    first = at.dataframe[0].value
    assert len(first) == 100 and list(first["number"]) == list(range(100))
    assert "trial_id" not in first.columns and pd.api.types.is_numeric_dtype(first["value"])
    at.number_input(key="trials_page").set_value(2).run()
    assert list(at.dataframe[0].value["number"]) == list(range(100, 130))
    at.number_input(key="trials_page").set_value(1).run()
    at.selectbox(key="trials_sort").set_value("value").run()
    values = at.dataframe[0].value["value"]
    study = optuna.load_study(study_name="paged", storage=url)
    expected = sorted(t.value for t in study.trials if t.value is not None)[:100]
    assert values.tolist() == expected  # as numbers: 10.2 after 9.8, never between 1.0 and 2.0
    at.radio(key="diverged_filter").set_value("yes").run()
    diverged = sum(bool(t.user_attrs.get("diverged")) for t in study.trials)
    assert any(b.label == f"Download the {diverged:,} filtered trials (CSV)" for b in at.get("download_button"))


_REPORTS: dict = {}


def report_titles(url: str, study: str) -> dict[str, list[str]]:
    """The chart titles of each section of `lpstudy report` on the study, read once per study."""
    from lpstudy.results.report import report_sections

    if (url, study) not in _REPORTS:
        from lpstudy.results.reading.frames import load_study

        sections = report_sections(load_study(open_reader(url), study))
        _REPORTS[(url, study)] = {title: [item.layout.title.text for item in items if hasattr(item, "layout")]
                                  for title, items in sections}
    return _REPORTS[(url, study)]


@pytest.mark.parametrize("study", ["search", "grid"])
@pytest.mark.parametrize("page", ["Home", "Effect of p", "Convergence", "Stability", "Stability lens"])
def test_each_page_draws_the_charts_of_its_report_section_in_the_same_order(seeded, study, page):
    """A page and its section of `lpstudy report` draw the same charts, in the same order
    (lpstudy.results.pages declares them once), for a search and for a replicate with verdicts."""
    url, _ = seeded
    at = run_page(page, url, study)
    assert not messages(at)["exception"], messages(at)
    section = "Overview" if page == "Home" else page
    drawn = report_titles(url, study)[section]
    assert chart_titles(at) == drawn, f"the {page} page and the report's {section} section disagree"
    if study == "grid" and page not in ("Home", "Convergence"):  # the verdicts are drawn on both
        assert any("reference" in title or "within folds" in title for title in drawn), drawn


def _comparison(tmp_path) -> str:
    """A comparison of p = 2 and p = 3, each tuned (2 trials) and replicated on 3 folds (p = 3 lower)."""
    from tests.staged_studies import write_staged_compare

    url = f"sqlite:///{tmp_path / 'cmp.db'}"
    write_staged_compare(url, "cmp", {"p=2": [3.0, 3.1, 3.2], "p=3": [2.8, 2.92, 2.99]}, max_folds=3, rounds=[3],
                         rope=0.005)
    return url


def test_effect_of_p_and_trials_read_a_comparison_through_its_arms(tmp_path):
    """A comparison's own study holds no trials: the pages read its arms' replicate runs (before,
    Effect of p said "This study has no trials yet" while Home counted them)."""
    url = _comparison(tmp_path)
    at = run_page("Effect of p", url, "cmp")
    shown = messages(at)
    assert not shown["exception"] and not shown["error"] and not any("no trials" in i for i in shown["info"]), shown
    assert any(m.value.startswith("**Verdict.**") and "p = 3" in m.value for m in at.markdown)
    assert "Final validation loss against p" in chart_titles(at)
    at = run_page("Trials", url, "cmp")
    assert not messages(at)["exception"], messages(at)
    assert "6 of 6 trials match; rows 1–6, sorted by trial." in [c.value for c in at.caption]
    assert at.dataframe[0].value["p"].tolist() == ["2", "2", "2", "3", "3", "3"]


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_reads_a_comparison_through_its_arms(tmp_path, page):
    url = _comparison(tmp_path)
    at = run_page(page, url, "cmp")
    shown = messages(at)
    assert not shown["exception"] and not shown["error"], shown
    assert not any("no trials yet" in text for text in shown["info"]), shown
    if page == "Export":
        assert any("p=3 has the lowest mean loss" in unescaped(i) and "its verdict:" in unescaped(i)
                   for i in shown["info"]), shown


def test_the_trials_table_fits_the_page_with_every_column_in_view(seeded):
    """Its columns' widths fit the page (tables.TABLE_PX), where the right-hand ones (time, worker,
    started) hid behind a scroll bar; no column narrower than its label, no number cut."""
    from tables import TABLE_PX, column_width

    url, _ = seeded
    at = run_page("Trials", url, "search")
    columns = {name: c for name, c in json.loads(at.dataframe[0].proto.columns).items() if not c.get("hidden")}
    assert sum(c["width"] for c in columns.values()) <= TABLE_PX, {n: c["width"] for n, c in columns.items()}
    assert all(c["width"] >= column_width(c["label"], []) for c in columns.values())
    assert list(columns)[-2:] == ["worker", "datetime_start"]
    shown = at.dataframe[0].value
    for name in ("value", "lr", "gain_init", "steps"):  # no number cut: each as wide as its widest shown number
        fmt = columns[name]["type_config"]["format"]
        assert columns[name]["width"] >= column_width(columns[name]["label"], [fmt % v for v in shown[name].dropna()])


def test_the_compare_page_without_a_comparison_gives_a_command_that_runs(seeded, tmp_path, capsys):
    """The empty state's command is a code block of one line (inline, it wrapped inside a flag) and
    runs as given: --preset, which compare requires, included."""
    import shlex

    from tests.study_helpers import cli

    url, _ = seeded
    at = run_page("Compare", url, "search")
    assert [i.value for i in at.info][0].startswith("This database holds no comparison.")
    command = at.code[0].value
    assert "\n" not in command and command.startswith("lpstudy compare --study NAME --preset ")
    code, _, err = cli(capsys, *shlex.split(command)[1:], "--storage", f"sqlite:///{tmp_path / 'c.db'}")
    assert code == 0, err


def test_homes_running_table_shows_every_column_under_its_label(seeded):
    """Home's "Running now" is a static table (tables.table) whose cells wrap to fit the page, every
    column in view (tests/test_browser_widths.py measures it at 1000 and 1400 px): as a grid it hid its
    gain, fold, step and loss columns behind a scroll bar."""
    url, _ = seeded
    at = run_page("Home", url, "grid")
    assert not at.dataframe
    assert list(at.table[0].value.columns) == ["trial", "worker", "running for", "p", "learning rate", "gain₀",
                                               "fold", "last step", "last validation loss"]


def test_a_static_table_breaks_lines_between_values_never_inside_one():
    """A number keeps its unit and "p = 1" stays whole on a line; words and an interval's two ends may
    part (after its comma)."""
    from tables import unbroken

    nb = "\u00a0"
    assert unbroken("p = 1") == f"p{nb}={nb}1"
    assert unbroken("+0.52 %") == f"+0.52{nb}%"
    assert unbroken("2 min 18 s") == f"2{nb}min 18{nb}s"
    assert unbroken("[−1.36 %, +0.31 %]") == f"[−1.36{nb}%, +0.31{nb}%]"
    assert unbroken("none within the design") == "none within the design"
