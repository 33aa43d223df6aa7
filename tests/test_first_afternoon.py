"""The stumbles of a first afternoon with the service, each as a user meets it: a mistake answered
with one line whose point comes first and that names what was meant; counts and words that agree."""

from __future__ import annotations

import pytest

from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.training.costs import Machine
from lpstudy.design.spec import StudySpec
from tests.study_helpers import cli


@pytest.fixture
def search_db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "lp", n_trials=4, n_evals=2, seed=1, states=False)
    return url


def test_a_postgres_url_gets_the_scheme_lpstudy_reads(capsys):
    code, _, err = cli(capsys, "status", "--study", "lp", "--storage", "postgres://me:Secr3t@db/lp")
    assert code == 2 and err.count("\n") == 1, err
    assert err.rstrip().endswith("; did you mean postgresql+psycopg://me:***@db/lp?"), err
    assert "Secr3t" not in err
    code, _, err = cli(capsys, "status", "--study", "lp", "--storage", "jornal:///x.log")
    assert code == 2 and err.rstrip().endswith("did you mean 'journal'?"), err


def test_a_misspelt_field_gets_the_near_field_names(search_db, capsys):
    code, _, err = cli(capsys, "search", "--study", "new", "--preset", "smoke", "--storage", search_db,
                       "--set", "max_step=4", "--n-trials", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("lpstudy: error: unknown field 'max_step' in the search space; did you mean 'max_steps'"), err


@pytest.mark.parametrize("command", [
    ["replicate", "--p", "1,2", "--folds", "2"],
    ["compare", "--p", "1,2", "--budget", "1", "--folds", "2"],
])
def test_a_study_continued_as_another_kind_is_refused_with_the_point_first(search_db, capsys, command):
    code, _, err = cli(capsys, command[0], "--study", "lp", "--preset", "smoke", "--storage", search_db, *command[1:])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("lpstudy: error: that name is a search: study 'lp' exists as a search, not a "), err
    assert len(err) < 250 and "stored" not in err, err  # not every field of two specs


def test_one_other_thread_is_one_thread():
    assert "(about 1 other thread wants its 2 cores)" in Machine(cores=2, others=1.2).describe(2)
    assert "(about 3 other threads want its 2 cores)" in Machine(cores=2, others=3).describe(2)


def _search_with_one_inf_run():
    """Seven runs at finite p (two groups) and one at p = ∞: ∞'s group holds one run."""
    import pandas as pd

    from lpstudy.results.reading.frames import StudyData, StudyInfo

    p = [1.0, 1.2, 1.4, 3.0, 3.2, 3.4, 3.6, float("inf")]
    trials = pd.DataFrame({"number": range(8), "state": ["COMPLETE"] * 8, "value": [3.0 + i / 10 for i in range(8)],
                           "diverged": [False] * 8, "p": p, "lr": [1e-3 * (1 + i) for i in range(8)],
                           "gain_init": [10.0 + i for i in range(8)], "fold": [0.0] * 8, "seed": [0.0] * 8})
    spec = {"space": {"p": {"type": "range", "low": 1.0, "high": 4.0, "inf": True},
                      "lr": {"type": "range", "low": 1e-4, "high": 1e-2, "log": True},
                      "gain_init": {"type": "range", "low": 2.0, "high": 64.0, "log": True}}}
    return StudyData("lp-smoke", StudyInfo("lp-smoke", kind="search", preset="smoke", spec=StudySpec.from_plain(spec)), trials, pd.DataFrame())


def test_effect_of_p_counts_the_same_runs_in_its_sentence_and_its_chart():
    from lpstudy.results.answers.search import search_effect
    from lpstudy.results.charts.search import surrogate_profile_chart

    answer = search_effect(_search_with_one_inf_run())
    assert answer.sentence.startswith("7 completed runs at finite p"), answer.sentence
    empty = surrogate_profile_chart(answer)
    note = " ".join(a.text for a in empty.layout.annotations).replace("<br>", " ")  # its lines read as one
    assert "this study has 7 (see the sentence above)" in note, note


def test_a_group_of_one_run_gets_its_best_found_and_no_expected_best_of_one():
    from lpstudy.results.analysis import tuned_profile
    from lpstudy.results.charts.effect import tuned_profile_chart

    profile = tuned_profile(_search_with_one_inf_run().trials, bins=(1.0, 2.0, 4.0))
    assert profile["m"].iloc[0] == 3  # the smallest group of two runs or more, not ∞'s one
    assert profile["expected_best"].isna().tolist() == [False, False, True]
    fig = tuned_profile_chart(profile)
    names = [t.name for t in fig.data]
    assert "expected best of 3 runs" in names and not any("of 1 run" in (n or "") for n in names), names
    assert "p ∞: one run, its loss alone." in " ".join(a.text for a in fig.layout.annotations).replace("<br>", " ")


def test_the_progress_bar_counts_no_interrupted_run_as_finished():
    """After Ctrl-C the workers fail their running trials as `stopped` and enqueue them again: the bar
    counts the runs that ended, not those (it stood at 2/8 with none finished)."""
    import optuna

    from lpstudy.cli.worker_progress import finished_trials

    study = optuna.create_study()
    study.add_trial(optuna.trial.create_trial(value=1.0))
    study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.PRUNED, value=2.0))
    study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.FAIL))  # a real failure: it ended
    for _ in range(2):  # interrupted: enqueued again, not finished
        study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.FAIL, user_attrs={"stopped": True}))
    assert finished_trials(study) == 3


def test_status_says_what_a_searchs_waiting_trials_are(tmp_path, capsys):
    """`search --n-trials 2` leaves 6 of the spread phase's 8 points waiting: status says what they are
    and who runs them."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    code, _, err = cli(capsys, "create", "--study", "s", "--preset", "smoke", "--storage", url)
    assert code == 0, err
    code, out, err = cli(capsys, "status", "--study", "s", "--storage", url)
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("trials"))
    assert line.endswith("8 waiting (enqueued, not run yet: the spread phase's points or retries; the next "
                         "`lpstudy worker --study s` takes them first)"), line


@pytest.mark.slow  # a whole report: 3 s
def test_the_offline_report_packs_plotlyjs_once_and_draws_after_it(tmp_path, capsys):
    """The report was 5 MB for 8 trials, 4.8 MB of it plotly.js: now plotly.js is inside once, gzipped,
    unpacked to the very text Plotly ships, and every figure's script waits for it (the browser test
    opens it offline); with --plotlyjs cdn the file is the figures alone."""
    import base64
    import gzip
    import re

    from plotly.offline import get_plotlyjs

    from lpstudy.results.report import DEFERRED

    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "s", n_trials=8, n_evals=4, seed=3, states=False)
    inline, cdn = tmp_path / "inline.html", tmp_path / "cdn.html"
    for path, how in ((inline, "inline"), (cdn, "cdn")):
        code, out, err = cli(capsys, "report", "--study", "s", "--storage", url, "-o", str(path), "--plotlyjs", how)
        assert code == 0, err
    text = inline.read_text()
    packed = re.findall(r"atob\('([A-Za-z0-9+/=]+)'\)", text)
    assert len(packed) == 1 and gzip.decompress(base64.b64decode(packed[0])).decode() == get_plotlyjs()
    scripts = re.findall(r"<script([^>]*)>", text)
    assert scripts[0] == "" and scripts[1:] and all(s == f' type="{DEFERRED}"' for s in scripts[1:]), set(scripts)
    assert inline.stat().st_size < 0.5 * len(get_plotlyjs())  # plotly.js alone was 4.8 MB
    assert cdn.stat().st_size < 0.1 * len(get_plotlyjs()) and "https://cdn.plot.ly/plotly-" in cdn.read_text()
    code, _, err = cli(capsys, "report", "--study", "s", "--storage", url, "-o", str(cdn), "--plotlyjs", "web")
    assert code == 2 and "--plotlyjs takes inline or cdn" in err, err


def test_a_run_files_long_floats_read_short_and_load_back_exactly():
    """A run file keeps every digit of a sampled value (a rounded lr retrains another run) and says it
    short beside it, for the reader: `lr: 0.0028800597026613283  # 0.00288`."""
    import yaml

    from lpstudy.training.config import resolve_config, write_run_file

    lr, gain = 0.0028800597026613283, 9.954196310386875
    text = write_run_file(None, "smoke", resolve_config("smoke", {"lr": lr, "gain_init": gain, "p": 3.0}),
                          source={"value": 3.2213144302368164, "trial": 4})
    assert "lr: 0.0028800597026613283  # 0.00288\n" in text and "gain_init: 9.954196310386875  # 9.954\n" in text
    assert "p: 3.0\n" in text and "trial: 4\n" in text  # short numbers: no comment
    loaded = yaml.safe_load(text)
    assert (loaded["lr"], loaded["gain_init"], loaded["source"]["value"]) == (lr, gain, 3.2213144302368164)
