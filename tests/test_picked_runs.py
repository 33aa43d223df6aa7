"""Runs picked by hand (lpstudy.results.picked_runs): their curves overlaid, one colour per run,
and their configurations side by side with the fields where they differ first, in `lpstudy report
--trials 3,5,8` and on the Trials page; trial numbers parsed once, a mistake told in one line."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from lpstudy.errors import UserError
from lpstudy.results.picked_runs import configurations, overlaid_curves, parse_trial_numbers
from lpstudy.study.synthetic import write_synthetic_study
from tests.study_helpers import cli


def test_trial_numbers_are_lists_and_ranges_each_once_in_the_order_given():
    assert parse_trial_numbers("8,3, 5") == [8, 3, 5]
    assert parse_trial_numbers("3-5,4,9") == [3, 4, 5, 9]
    for wrong in ("x", "5-3", "", "-1", "0-20"):
        with pytest.raises(UserError):
            parse_trial_numbers(wrong)


def _frames():
    trials = pd.DataFrame({"number": [0, 1, 2], "state": ["COMPLETE"] * 3, "value": [3.0, 2.5, 2.7],
                           "diverged": [False] * 3, "p": [1.0, 2.0, float("inf")], "lr": [1e-3, 1e-3, 1e-3],
                           "gain_init": [10.0, 20.0, 10.0], "fold": [0.0, 0.0, 0.0]})
    curves = pd.DataFrame({"trial_number": [0, 0, 1, 1, 2, 2], "step": [0, 10] * 3,
                           "val_loss": [4.0, 3.0, 4.1, 2.5, 4.2, 2.7], "train_loss": [4.0, 2.9, 4.1, 2.4, 4.2, 2.6]})
    return trials, curves


def test_configurations_put_the_fields_that_differ_first_one_column_per_trial():
    trials, _ = _frames()
    table = configurations(trials, [2, 0])
    assert list(table.columns) == ["field", "differs", "trial 2", "trial 0"]
    differ = table.loc[table["differs"], "field"].tolist()
    assert differ == ["value", "p"] and table["differs"].tolist() == sorted(table["differs"], reverse=True)
    assert table.set_index("field").loc["p"].tolist()[1:] == ["∞", "1"]
    assert table.set_index("field").loc["lr", "trial 0"] == "0.001"


def test_the_overlaid_curves_draw_each_picked_run_in_its_own_colour_and_only_those():
    trials, curves = _frames()
    fig = overlaid_curves(curves, trials, [0, 2])
    solid = [t for t in fig.data if t.showlegend is not False]
    assert [t.name.split(" · ")[0] for t in solid] == ["trial 0", "trial 2"]
    assert len({t.line.color for t in solid}) == 2
    assert [list(t.y) for t in solid] == [[4.0, 3.0], [4.2, 2.7]]
    dotted = [t for t in fig.data if t.showlegend is False]  # the training loss, dotted, in the run's colour
    assert [t.line.color for t in dotted] == [t.line.color for t in solid] and {t.line.dash for t in dotted} == {"dot"}


def test_report_trials_adds_the_picked_runs_section(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "s", n_trials=12, n_evals=4, seed=3, states=False)
    out = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", "--study", "s", "--storage", url, "-o", str(out), "--trials", "3,5-6")
    assert code == 0, err
    text = out.read_text()
    assert "<a href='#s5'>Picked runs</a>" in text
    section = text[text.index("id='s5'"):]
    assert "Picked runs: validation loss against step" in section
    assert re.search(r"<th>trial 3</th>\s*<th>trial 5</th>\s*<th>trial 6</th>", section), section[:3000]
    code, _, err = cli(capsys, "report", "--study", "s", "--storage", url, "-o", str(out), "--trials", "3,99")
    assert code == 2 and err == "lpstudy: error: no trial 99 in this study; its trials are numbered 0 to 11\n", err
