"""Notes on a study and on a trial: `lpstudy note` keeps them where optuna-dashboard keeps its own
(its get_note reads them back), and the Home and Trials pages show them, their Markdown rendered,
without a way to write them there."""

from __future__ import annotations

import optuna

from tests.study_helpers import cli


def test_a_note_is_kept_where_optuna_dashboard_reads_it_and_the_pages_show_it(tmp_path, capsys, monkeypatch):
    from optuna.trial import Trial
    from optuna_dashboard import get_note

    from lpstudy.study.synthetic import write_synthetic_study
    from tests.study_helpers import SEEDED_AT
    from tests.test_app import run_page

    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "s", n_trials=6, n_evals=3, seed=2, now=SEEDED_AT, states=False)
    code, _, err = cli(capsys, "note", "--study", "s", "--storage", url, "**lr** matters more than p here")
    assert code == 0, err
    code, _, err = cli(capsys, "note", "--study", "s", "--storage", url, "--trial", "2", "a *spike* at step 50")
    assert code == 0, err
    study = optuna.load_study(study_name="s", storage=url)
    assert get_note(study) == "**lr** matters more than p here"  # optuna-dashboard's own reader
    (two,) = [t for t in study.trials if t.number == 2]
    assert get_note(Trial(study, two._trial_id)) == "a *spike* at step 50"

    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = run_page("Home", url, "s")
    assert "**lr** matters more than p here" in [m.value for m in at.markdown]  # given to st.markdown: rendered
    assert not at.text_area and not at.text_input  # the page only reads notes
    at = run_page("Trials", url, "s")
    at.selectbox(key="trial_number").set_value(2).run()
    assert "a *spike* at step 50" in [m.value for m in at.markdown]


def test_a_note_on_a_trial_the_study_lacks_is_refused_and_nothing_is_written(tmp_path, capsys):
    import sqlite3

    from lpstudy.study.synthetic import write_synthetic_study

    path = tmp_path / "study.db"
    write_synthetic_study(f"sqlite:///{path}", "s", n_trials=4, n_evals=3, seed=2, states=False)
    before = list(sqlite3.connect(path).iterdump())
    code, _, err = cli(capsys, "note", "--study", "s", "--storage", f"sqlite:///{path}", "--trial", "99", "x")
    assert code == 2 and err.strip() == "lpstudy: error: study 's' has no trial 99; its trials are numbered 0 to 3", err
    assert list(sqlite3.connect(path).iterdump()) == before
