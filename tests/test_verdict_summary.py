"""A paragraph in plain words above every verdict table (the Effect of p, Compare and Convergence
pages, `lpstudy report`, `lpstudy verdict` and `status`): what was compared, what is known, what would
decide the rest and its cost, from the answer's own fields."""

from __future__ import annotations

import pandas as pd

from lpstudy.results.answers.answer_types import ArmDesign, ArmVerdict, Reference, Rope, ToDecide, VerdictAnswer
from lpstudy.results.tables.summary import verdict_summary
from tests.study_helpers import cli

COST = "20 trial(s) of preset smoke: about 3 min on one CPU thread"


def _answer(verdicts: dict[float, str], plan: list[float] | None = None, interim: bool = False) -> VerdictAnswer:
    arms = [ArmVerdict(field="p", value=p, p=p, verdict=v, n_folds=5, mean=2.7) for p, v in verdicts.items()]
    to_decide = ToDecide(arms=[ArmDesign(value=p, folds=10) for p in plan], folds=10, runs=20, time=COST,
                         command="lpstudy replicate --study g-k10 --p 2,4 --folds 10") if plan else None
    return VerdictAnswer(kind="replicate", k=5, reference=Reference(field="p", value=2.0, mean=2.7, n_folds=5),
                         arms=arms, rope=Rope(words="±0.01 nats"), to_decide=to_decide, interim=interim)


def test_the_paragraph_says_what_was_compared_what_is_known_and_what_would_decide_at_what_cost():
    text = verdict_summary(_answer({1.0: "better", 3.0: "equivalent", 3.5: "worse", 4.0: "undecided"}, plan=[4.0]))
    assert text.startswith("In plain words: this compares the final validation loss of p = 1, p = 3, p = 3.5 and "
                           "p = 4 with p = 2 (the reference), each run on the same 5 folds")
    assert "A difference smaller than ±0.01 nats counts as none" in text
    assert "p = 1 has a lower final validation loss than p = 2, by more than the margin that counts" in text
    assert "p = 3 has the same final validation loss as p = 2, within the margin that counts" in text
    assert "p = 3.5 has a higher final validation loss than p = 2" in text
    assert "p = 4 is not yet told apart from p = 2" in text
    assert f"What would decide p = 4: 20 runs (10 folds an arm), {COST}" in text


def test_the_paragraph_says_when_nothing_is_left_to_run_and_when_runs_are_still_to_come():
    assert "Every arm is decided: nothing more needs to run." in verdict_summary(
        _answer({1.0: "better", 3.0: "better"}))
    assert "p = 1 and p = 3 have a lower final validation loss" in verdict_summary(_answer({1.0: "better", 3.0: "better"}))
    interim = verdict_summary(_answer({1.0: "undecided"}, interim=True))
    assert "Runs are still to come: no arm gets a verdict before every fold has run" in interim
    assert "not yet told apart" not in interim and "What would decide" not in interim  # no plan: none claimed
    assert "No design" not in interim  # its own runs may decide it
    assert "No design within the limits would decide p = 1: the difference, if any, is too small" in verdict_summary(
        _answer({1.0: "undecided"}))


def test_the_report_and_the_terminal_put_the_paragraph_above_the_verdict_table(seeded, capsys):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.reading.frames import load_study
    from lpstudy.results.report import report_sections

    url, _ = seeded
    effect = dict(report_sections(load_study(open_reader(url), "grid")))["Effect of p"]
    table = next(i for i, item in enumerate(effect) if isinstance(item, pd.DataFrame) and "verdict" in item.columns)
    assert str(effect[table - 2]).startswith("In plain words: this compares the final validation loss of p = 1")
    assert str(effect[table - 1]).startswith("Verdicts against the reference")  # the table's title between
    code, out, err = cli(capsys, "verdict", "--study", "grid", "--storage", url)
    assert code == 0, err
    assert -1 < out.find("In plain words: this compares the final validation loss") < out.find(
        "Verdicts against the reference") and out.find("In plain words: this compares how fast") > 0


def test_the_effect_of_p_and_convergence_pages_show_the_paragraph_above_their_tables(seeded, monkeypatch):
    from tests.test_app import run_page

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    for page, start in (("Effect of p", "In plain words: this compares the final validation loss of p = 1"),
                        ("Convergence", "In plain words: this compares how fast p = 1")):
        at = run_page(page, url, "grid")
        assert not at.exception, at.exception
        assert [m.value for m in at.markdown if m.value.startswith(start)], page
