"""A paragraph in plain words above every verdict table (the Effect of p, Compare and Convergence
pages, `lpstudy report`, `lpstudy verdict` and `status`): what was compared, what is known, what would
decide the rest and its cost, from the answer's own fields."""

from __future__ import annotations

import pandas as pd

from lpstudy.results.answers.answer_types import ArmDesign, ArmVerdict, Reference, Rope, ToDecide, VerdictTable
from lpstudy.results.tables.summary import verdict_summary
from tests.study_helpers import cli

COST = "20 trial(s) of preset smoke: about 3 min on one CPU thread"


def _arm(p: float, verdict: str, interim: bool) -> ArmVerdict:
    """An arm's verdict with what the paragraph reads; the numbers it does not read are None."""
    unread = dict.fromkeys(("diff", "rel_diff", "low", "high", "rel_low", "rel_high", "equivalence_low",
                            "equivalence_high", "p_value_difference", "p_value_equivalence", "p_value_beyond_rope",
                            "holds_up_to_rho", "measured_rho", "folds_to_decide", "decided_by"))
    return ArmVerdict(field="p", value=p, p=p, verdict=verdict, n_folds=5, mean=2.7, interim=interim, failed_runs=0,
                      reference_failed_runs=0, runs=5, barred_by_failures=False,
                      region="interim" if interim else verdict, **unread)


def _answer(verdicts: dict[float, str], plan: list[float] | None = None, interim: bool = False) -> VerdictTable:
    arms = [_arm(p, v, interim) for p, v in verdicts.items()]
    to_decide = ToDecide(power=0.8, max_repeats=10, seeds_measured=False, repeats=1, seeds=1,
                         arms=[ArmDesign(value=p, test="beyond the ROPE", power_target=0.8, folds=10, repeats=1,
                                         seeds=1, runs_per_arm=10, power=0.8) for p in plan],
                         folds=10, runs=20, time=COST,
                         command="lpstudy replicate --study g-k10 --p 2,4 --folds 10") if plan else None
    return VerdictTable(sentence="", kind="replicate", method="", alpha=0.05, k=5, repeats=1,
                        reference=Reference(field="p", value=2.0, mean=2.7, n_folds=5, failed_runs=0, runs_in=5),
                        arms=arms, rope=Rope(relative=None, absolute=0.01, set="nats", given="0.01",
                                             words="±0.01 nats"),
                        to_decide=to_decide, interim=interim)


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


def test_the_paragraph_names_the_arms_the_plan_decides_without_a_command_and_those_no_runs_can():
    """A comparison's plan has no command (its design is in words): the paragraph still names the arm it
    decides, as the verdict's sentence does, and never says no design would; an arm whose differences do
    not vary is said so, not "too small against the spread" (it has none)."""
    from dataclasses import replace

    answer = _answer({3.0: "undecided", 4.0: "undecided"}, plan=[4.0])
    assert answer.to_decide is not None
    flat = replace(answer.arms[0], unresolved="the paired differences do not vary")
    text = verdict_summary(replace(answer, arms=[flat, answer.arms[1]],
                                   to_decide=replace(answer.to_decide, command=None)))
    assert f"What would decide p = 4: 20 runs (10 folds an arm), {COST}; the design is in the verdict above" in text
    assert "p = 3 differs from p = 2 by the same amount on every fold" in text
    assert "No design within the limits" not in text


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


def test_status_prints_the_same_plain_words_as_the_verdict():
    """`status` carries a part of the answer (its --json's "verdicts") and prints the table and the
    paragraph from it: the paragraph is the one `lpstudy verdict` prints, runs still to come included
    (status read `interim` as a default False before, and `kind`, `repeats` and `to_decide` likewise)."""
    import json

    from lpstudy.results.answers.answer_types import VerdictAnswer
    from lpstudy.results.status import verdicts_of
    from tests.answer_studies import FIXTURE

    for name, plain in json.loads(FIXTURE.read_text()).items():
        if "arms" not in plain:
            continue
        answer = VerdictAnswer.of(plain)
        carried = VerdictTable.of(json.loads(json.dumps(verdicts_of(answer))))
        assert verdict_summary(carried) == verdict_summary(answer), name
    assert VerdictAnswer.of(json.loads(FIXTURE.read_text())["replicate_grid"]).interim  # the case it was wrong in


def test_the_verdicts_importance_line_prints_a_dash_where_the_answer_has_no_number():
    """`lpstudy verdict` prints the compared field's share with what noise alone gives and the corrected F
    test's p-value; an importance without them (a search's type II shares: null and p_value None) prints
    "–" for each rather than stopping the command with a TypeError."""
    from lpstudy.cli.verdict import importance_line
    from lpstudy.results.answers.answer_types import Importance

    searched = Importance(shares={"lr": 0.61, "p": 0.2}, low={}, high={}, null=None, reason="type II shares")
    assert importance_line(searched) == ("importance: lr's partial ω² within folds 0.61 [–, –] · noise alone up to – "
                                         "· p-value (F corrected for the folds' correlation) –")
    measured = Importance(shares={"p": 0.42}, low={"p": 0.1}, high={"p": 0.7}, null=0.25, p_value=0.0123,
                          reason="p is the only field")
    assert importance_line(measured) == ("importance: p's partial ω² within folds 0.42 [0.10, 0.70] · noise alone up "
                                         "to 0.25 · p-value (F corrected for the folds' correlation) 0.0123")
    assert importance_line(Importance(shares={}, low={}, high={}, null=None, reason="no finished runs yet")) is None
    assert importance_line(None) is None
