"""Plain words beside the statistics: every statistical word of a verdict table (ROPE, TOST, Holm,
corrected t, ω², Kaplan–Meier) has one plain line, shown under the table on the pages, printed by `lpstudy verdict`; and an interval only where its rule allows (3 runs up)."""

from __future__ import annotations

from tests.study_helpers import cli
from tests.test_verdicts import planted_trials

TERMS = ("ROPE", "TOST", "Holm", "corrected t", "ω²", "Kaplan–Meier")


def test_verdict_prints_a_plain_line_for_each_word_of_its_table(seeded, capsys):
    url, _ = seeded
    code, out, err = cli(capsys, "verdict", "--study", "grid", "--storage", url)
    assert code == 0, err
    for term in TERMS:
        assert f"  {term}: " in out, (term, out[-2000:])


def test_the_effect_of_p_page_explains_its_verdict_table(seeded, monkeypatch):
    from tests.test_app import run_page

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = run_page("Effect of p", url, "grid")
    (box,) = [e for e in at.expander if e.label.startswith("What the words mean")]
    assert all(term in box.label for term in TERMS)
    text = " ".join(m.value for m in box.markdown)
    assert all(f"**{term}**: " in text for term in TERMS), text
    assert any("p-value (equivalence)" in d.value.columns for d in at.table)  # the words' table, the glossary under it


def test_a_group_of_two_runs_gets_no_interval_in_the_per_p_table():
    from lpstudy.results.analysis import per_p_summary

    summary = per_p_summary(planted_trials({1.0: [2.0, 2.3], 2.0: [2.0, 2.1, 2.2]})).set_index("p")
    assert summary.loc[1.0, ["ci_low", "ci_high"]].isna().all() and summary.loc[1.0, "n_ok"] == 2
    assert summary.loc[2.0, "ci_low"] < 2.1 < summary.loc[2.0, "ci_high"]
