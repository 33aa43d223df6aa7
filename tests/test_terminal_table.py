"""The terminal verdict (`lpstudy verdict`, `lpstudy status`): a drawn table, one row a line, in a
terminal of 100 columns or more; `column value` pairs, one arm to a paragraph, in a narrow terminal
and whenever the output is piped (a reader greps it, a script splits it on " · ")."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from lpstudy.results.status import WIDE_TERMINAL
from tests.study_helpers import cli


def _answer(url: str):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.answers import AnswerOptions, study_answer
    from lpstudy.results.reading.compare import verdict_data

    return study_answer(verdict_data(open_reader(url), "grid"), AnswerOptions(rope=0.01))


def _printed(answer, width: int, terminal: bool) -> str:
    from lpstudy.results.status import print_verdict_table

    out = io.StringIO()
    print_verdict_table(Console(file=out, width=width, force_terminal=terminal, color_system=None), answer)
    return out.getvalue()


def test_a_wide_terminal_gets_the_verdict_table_drawn_one_arm_a_line(seeded):
    from lpstudy.results.tables.verdicts import verdict_frame

    answer = _answer(seeded[0])
    frame = verdict_frame(answer)
    text = _printed(answer, 200, terminal=True)  # every cell on one line
    (header,) = [line for line in text.splitlines() if line.startswith("┃")]  # the headings on one line
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == list(frame.columns)
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert len(rows) == len(frame)
    for (_, arm), line in zip(frame.iterrows(), rows):  # then each arm on its line, each cell under its heading
        assert [cell.strip() for cell in line.split("│")[1:-1]] == list(arm), line
    assert not [line for line in text.splitlines() if line.startswith("  arm ")]  # no pairs


@pytest.mark.parametrize("width", [WIDE_TERMINAL, 126, 127, 160])
def test_a_table_drawn_in_a_terminal_never_cuts_a_number_nor_runs_past_the_edge(seeded, width):
    """From 100 columns a table is drawn where its cells fit whole (a cell wraps between words); the
    verdict table's eleven columns need 127, and narrower it is printed as pairs."""
    import re

    answer = _answer(seeded[0])
    text = _printed(answer, width, terminal=True)
    assert all(len(line) <= width for line in text.splitlines() if line.startswith(("  ", "│", "┃", "┏", "└")))
    interval = next(a for a in answer.arms if a.low is not None)
    low, high = f"[{interval.low:+.4f},", f"{interval.high:+.4f}]"
    if width < 127:
        assert "│" not in text and f"interval (nats) {low} {high}" in text
        return
    cells = [cell.strip() for line in text.splitlines() if line.startswith(("│", "┃"))
             for cell in re.split("[│┃]", line)]
    words = [word for cell in cells for word in cell.split()]
    assert low in words and high in words  # wrapped, if at all, between the interval's ends: each whole


@pytest.mark.parametrize("width, terminal", [(WIDE_TERMINAL - 1, True), (200, False)])
def test_a_narrow_terminal_or_a_pipe_gets_the_verdicts_as_column_value_lines(seeded, width, terminal):
    answer = _answer(seeded[0])
    text = _printed(answer, width, terminal)
    assert "│" not in text and "─" not in text
    arm = next(a for a in answer.arms if a.n_folds)
    paragraph = [line for line in text.splitlines() if line.startswith(f"  arm p = {arm.value:g} · ")]
    assert paragraph and f"verdict {arm.verdict}" in paragraph[0], text


def test_lpstudy_verdict_piped_prints_column_value_lines_however_wide(seeded, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # wide enough for the aligned columns: piped, still pairs
    code, out, err = cli(capsys, "verdict", "--study", "grid", "--storage", seeded[0])
    assert code == 0, err
    assert "  arm p = 2 · verdict reference · " in out and "│" not in out
