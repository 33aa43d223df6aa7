"""One statistic, one source: every interval and p-value that compares an arm with the reference, in
`lpstudy status`, `lpstudy compare`, `lpstudy verdict` (table and --json) and the Compare page's
table, is the answer's (lpstudy.results.answers.study_answer), printed the same way."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from lpstudy.study.synthetic import write_synthetic_study
from tests.study_helpers import cli

NOW = datetime(2026, 1, 1, 12, 0, 0)
SIGNED_INTERVAL = re.compile(r"\[([+-]\d+\.\d{4}), ([+-]\d+\.\d{4})\]")  # an interval of a difference, in nats


def _comparison(tmp_path) -> str:
    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.compare import create_compare, make_plan

    url = f"sqlite:///{tmp_path / 'compare.db'}"
    plan = make_plan("p", ["1", "2"], ["lr"], budget=3, folds=3, preset="smoke")
    create_compare(open_storage(url, create_tables=True), "cmp", plan)
    for p in (1.0, 2.0):
        write_synthetic_study(url, f"cmp:p={p:g}:folds", kind="replicate", p_values=[p], folds=3,
                              n_evals=4, seed=3, states=False, include_inf=False, now=NOW)
    return url


def _verdict_arm(capsys, url: str, study: str, value: float) -> dict:
    code, out, err = cli(capsys, "verdict", "--study", study, "--storage", url, "--json")
    assert code == 0, err
    (arm,) = [a for a in json.loads(out)["arms"] if float(a["value"]) == value]
    return arm


def _shown(arm: dict) -> tuple[str, str]:
    return f"[{arm['low']:+.4f}, {arm['high']:+.4f}]", format(arm["p_value_difference"], ".3g")


def test_status_and_verdict_of_a_replicate_give_the_same_interval_and_p_value(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'grid.db'}"
    write_synthetic_study(url, "grid", kind="replicate", p_values=[1.0, 2.0], folds=4, n_evals=4, seed=1,
                          states=False, include_inf=False, now=NOW)
    arm = _verdict_arm(capsys, url, "grid", 1.0)
    interval, p_value = _shown(arm)
    code, out, _ = cli(capsys, "status", "--study", "grid", "--storage", url, "--json")
    (row,) = [a for a in json.loads(out)["verdicts"]["arms"] if float(a["value"]) == 1.0]
    assert (row["low"], row["high"], row["p_value_difference"], row["verdict"]) == (
        arm["low"], arm["high"], arm["p_value_difference"], arm["verdict"])
    code, out, _ = cli(capsys, "status", "--study", "grid", "--storage", url)
    assert code == 0
    assert SIGNED_INTERVAL.findall(out) == SIGNED_INTERVAL.findall(interval)  # no second interval for the arm
    assert p_value in out and "p-value" in out
    code, out, _ = cli(capsys, "verdict", "--study", "grid", "--storage", url)
    final_loss = out.split("Convergence against the reference")[0]  # the convergence and stability tables follow
    assert SIGNED_INTERVAL.findall(final_loss) == SIGNED_INTERVAL.findall(interval) and p_value in final_loss


def test_compare_and_verdict_of_a_comparison_give_the_same_interval_and_p_value(tmp_path, capsys):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.status import render_compare

    url = _comparison(tmp_path)
    interval, p_value = _shown(_verdict_arm(capsys, url, "cmp", 1.0))
    capsys.readouterr()
    render_compare(open_reader(url), "cmp")
    out = capsys.readouterr().out
    assert SIGNED_INTERVAL.findall(out) == SIGNED_INTERVAL.findall(interval)
    assert p_value in out and "p-value" in out


@pytest.mark.slow
def test_the_compare_pages_table_and_chart_are_the_verdicts(tmp_path, capsys, monkeypatch):
    from tests.test_app import figures, run_page

    monkeypatch.setenv("LPSTUDY_STORAGE", "")  # run_page sets it: undone after the test

    url = _comparison(tmp_path)
    arm = _verdict_arm(capsys, url, "cmp", 1.0)
    interval, p_value = _shown(arm)
    at = run_page("Compare", url, "cmp")
    tables = [d.value for d in at.table if "interval (nats)" in d.value.columns]
    assert len(tables) == 1  # one table compares the arms: the verdicts
    row = tables[0].set_index("arm").loc["p = 1"]
    assert (row["interval (nats)"], row["p-value (difference)"]) == (interval, p_value)
    # the equal-budget chart: coloured by the verdict, a legend, the reference neutral
    from lpstudy.results.tables.verdicts import NEUTRAL_COLOUR, VERDICT_COLOURS

    chart = figures(at)["Equal-budget comparison: difference to the reference p = 2 (verdict's interval)"]
    named = {t["name"]: t for t in chart["data"] if t.get("showlegend")}
    assert set(named) >= set(VERDICT_COLOURS)
    drawn = [t for t in named.values() if t["name"] != "reference" and any(y is not None for y in t.get("y") or [])]
    assert named["reference"]["marker"]["color"] == NEUTRAL_COLOUR and named["reference"]["y"] == [0.0]
    (verdict_trace,) = drawn
    assert verdict_trace["name"] == arm["verdict"] and verdict_trace["marker"]["color"] == VERDICT_COLOURS[arm["verdict"]]
    assert verdict_trace["y"][0] == pytest.approx(arm["diff"])
