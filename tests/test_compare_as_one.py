"""A comparison spoken of as one, by `compare`, `status`, the worker and the dashboard's Home: its
arms, the tuning budget spent, the fold runs done, what is left, and the command that runs the rest
only while something is left; no empty search study's lines ("sampler None"), no `nan`, no
placeholder, no "stopped" after every trial."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lpstudy.results.reading.compare import load_compare
from lpstudy.results.tables.verdicts import VERDICT_COLUMNS
from tests.once_per_run import once_per_run
from tests.study_helpers import cli, lp_env, lpstudy
from lpstudy.db.kinds import open_reader

pytestmark = pytest.mark.slow  # real workers and several commands a test: minutes

APP = Path(__file__).resolve().parents[1] / "app"
QUICK = ["--set", "max_steps=20", "--set", "eval_interval=10", "--set", "eval_iters=1"]


def _home(url: str, study: str) -> AppTest:
    from common import STUDY_KEY  # app/common.py, on the path by conftest

    old = os.environ.get("LPSTUDY_STORAGE")
    os.environ["LPSTUDY_STORAGE"] = url
    try:
        at = AppTest.from_file(str(APP / "dashboard.py"), default_timeout=60)
        at.session_state[STUDY_KEY] = study
        at.run()
    finally:
        if old is None:
            os.environ.pop("LPSTUDY_STORAGE", None)
        else:
            os.environ["LPSTUDY_STORAGE"] = old
    assert not at.exception
    return at


def _verdict_row(out: str, arm: str) -> dict[str, str]:
    """An arm's row of the verdict table as status prints it at 80 columns (lpstudy.results.
    tables.verdicts; status.print_table): its columns as `column value` pairs, over a few lines."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Verdicts against the reference"))
    rows, row = [], []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        if line.startswith("  arm ") and row:
            rows.append(row)
            row = []
        row.append(line.strip())
    rows.append(row)
    found = {}
    for row in rows:
        pairs = " · ".join(row).split(" · ")
        cells = {}
        for pair in pairs:
            column = max((c for c in VERDICT_COLUMNS if pair.startswith(c + " ")), key=len)
            cells[column] = pair[len(column) + 1:]
        found[cells["arm"]] = cells
    return found[arm]


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


COMPARE = ["compare", "--study", "cmp", "--preset", "smoke", "--p", "1,2", "--tune", "lr", "--budget", "2",
           "--folds", "2", "--sampler-seed", "1", *QUICK]
FRESH_LINE = "2 arms · tuning 0/4 trials · folds 0/4 runs · left: 4 tuning trial(s) and 4 fold run(s)"


def test_compare_and_status_before_any_worker_say_what_is_left_and_how_to_run_it(sqlite_url, capsys):
    code, out, err = cli(capsys, *COMPARE, "--storage", sqlite_url)
    assert code == 0, err
    # 2 arms × (2 tuning trials + 2 folds), nothing run: what that costs, and how to run it
    assert "left: 8 trial(s) of preset smoke" in err
    assert "start workers anywhere: lpstudy worker --study cmp --storage URL" in err
    assert f"arms     {FRESH_LINE}" in out
    code, out, err = cli(capsys, "status", "--study", "cmp", "--storage", sqlite_url)
    assert code == 0, err
    assert f"arms     {FRESH_LINE}" in out and "next     lpstudy worker --study cmp --storage URL" in out
    # every arm has its row before it has a trial
    assert [line.split()[:2] for line in out.splitlines() if line.lstrip().startswith("p=")] == [
        ["p=1", "0/2"], ["p=2", "0/2"]]


def test_home_of_a_fresh_comparison_shows_its_arms_and_the_command_that_runs_them(sqlite_url, capsys):
    assert cli(capsys, *COMPARE, "--storage", sqlite_url)[0] == 0
    at = _home(sqlite_url, "cmp")
    assert _metrics(at) == {"Arms": "2", "Tuning trials": "0 / 4", "Fold runs": "0 / 4", "Left": "8"}
    assert [i.value for i in at.info] == [
        f"{FRESH_LINE}. Run it with `lpstudy worker --study cmp --storage {sqlite_url}` (as many workers as you like)."]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> dict:
    """A comparison run to its end by one worker, then `compare` and `status` again: their outputs.
    Built once per test run (tests/once_per_run.py): tests only read it."""
    return once_per_run(tmp_path_factory, "finished-comparison", _finish)


def _finish(folder: Path) -> dict:
    url = f"sqlite:///{folder / 'cmp.db'}"
    made = lpstudy(*COMPARE, "--storage", url)
    assert made.returncode == 0, made.stderr
    worker = lpstudy("worker", "--study", "cmp", "--storage", url, "--devices", "cpu", "--no-progress", timeout=600)
    assert worker.returncode == 0, worker.stderr
    again = lpstudy(*COMPARE, "--storage", url)
    status = lpstudy("status", "--study", "cmp", "--storage", url, env=lp_env(COLUMNS="80"))  # as piped: 80 columns
    as_json = lpstudy("status", "--study", "cmp", "--storage", url, "--json")
    assert again.returncode == status.returncode == as_json.returncode == 0
    return {"url": url, "worker": worker.stderr, "again": again, "status": status.stdout,
            "json": json.loads(as_json.stdout)}


@pytest.mark.slow
def test_the_comparisons_worker_names_each_trials_arm_and_says_once_why_it_stopped(finished):
    err = finished["worker"]
    assert "(--n-trials)" not in err  # no --n-trials was given
    assert err.count("stopped:") == 1, err
    assert "stopped: nothing left to run in the comparison · this worker's trials: 8 complete" in err
    for study in ("cmp:p=1:tune", "cmp:p=2:tune", "cmp:p=1:folds", "cmp:p=2:folds"):
        for number in (0, 1):
            assert f"{study}: trial {number} COMPLETE" in err


def test_compare_on_a_finished_comparison_says_nothing_is_left_and_not_to_start_workers(finished):
    done = finished["again"]
    assert "start workers" not in done.stderr and "trial(s) of preset" not in done.stderr
    assert "arms     2 arms · tuning 4/4 trials · folds 4/4 runs · nothing left: every arm is tuned and replicated" \
        in done.stdout


def test_status_of_a_finished_comparison_speaks_of_its_arms_without_nan(finished):
    out = finished["status"]
    assert out.splitlines()[0] == "study cmp · comparison · preset smoke"
    for wrong in ("sampler None", "pruner None", "no trial has finished yet", "nan", "next "):
        assert wrong not in out, (wrong, out)
    assert "arms     2 arms · tuning 4/4 trials · folds 4/4 runs · nothing left" in out
    # the reference arm's row: its mean over its two folds, and no difference to itself
    data = load_compare(open_reader(finished["url"]), "cmp")
    ref_mean = data.folds[data.folds["arm"] == "p=2"]["value"].mean()
    assert _verdict_row(out, "p = 2") == {**{column: "–" for column in VERDICT_COLUMNS}, "arm": "p = 2",
                                          "verdict": "reference", "folds": "2", "mean loss": f"{ref_mean:.4f}"}
    progress = finished["json"]["comparison"]
    assert {k: progress[k] for k in ("tuning_spent", "tuning_total", "cells_done", "cells_total", "left", "done")} == {
        "tuning_spent": 4, "tuning_total": 4, "cells_done": 4, "cells_total": 4, "left": 0, "done": True}


def test_home_of_a_finished_comparison_says_it_is_done_without_a_placeholder(finished):
    at = _home(finished["url"], "cmp")
    assert _metrics(at) == {"Arms": "2", "Tuning trials": "4 / 4", "Fold runs": "4 / 4", "Left": "0"}
    shown = " ".join(str(node.value) for node in [*at.info, *at.success, *at.markdown, *at.caption])
    assert "NAME" not in shown and "lpstudy worker" not in shown and "Start workers" not in shown
    assert [s.value for s in at.success] == [
        "Every arm is tuned and replicated: the Compare page pairs them fold by fold."]


def test_compare_requires_a_preset_as_replicate_does(sqlite_url, capsys):
    # its cost is on --help, with every costly command's (tests/test_first_run.py)
    code, _, err = cli(capsys, "compare", "--study", "c", "--storage", sqlite_url, "--p", "1,2")
    assert code == 2 and "Missing option '--preset'" in err and err.count("\n") == 1
