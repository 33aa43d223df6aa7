"""A comparison spoken of as one, by `compare`, `status`, the worker and the dashboard's Home: its
arms, the tuning budget spent, the fold runs done, what is left, and the command that runs the rest
only while something is left; no empty search study's lines ("sampler None"), no `nan`, no
placeholder, no "stopped" after every trial."""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from lpstudy.results.compare import load_compare
from tests.study_helpers import cli

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


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_a_comparison_before_and_after_its_workers_says_what_is_left_and_the_next_command_only_then(
        sqlite_url, capsys):
    args = ["compare", "--study", "cmp", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2",
            "--tune", "lr", "--budget", "2", "--folds", "2", "--sampler-seed", "1", *QUICK]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    # before: 2 arms × (2 tuning trials + 2 folds), nothing run; what that costs, and how to run it
    assert "left: 8 trial(s) of preset smoke" in err
    assert "start workers anywhere: lpstudy worker --study cmp --storage URL" in err
    assert "arms     2 arms · tuning 0/4 trials · folds 0/4 runs · left: 4 tuning trial(s) and 4 fold run(s)" in out
    code, out, err = cli(capsys, "status", "--study", "cmp", "--storage", sqlite_url)
    assert code == 0, err
    assert "next     lpstudy worker --study cmp --storage URL" in out
    at = _home(sqlite_url, "cmp")
    assert _metrics(at) == {"Arms": "2", "Tuning trials": "0 / 4", "Fold runs": "0 / 4", "Left": "8"}
    assert [i.value for i in at.info] == [
        "2 arms · tuning 0/4 trials · folds 0/4 runs · left: 4 tuning trial(s) and 4 fold run(s). Run it with "
        f"`lpstudy worker --study cmp --storage {sqlite_url}` (as many workers as you like)."]

    code, out, err = cli(capsys, "worker", "--study", "cmp", "--storage", sqlite_url, "--devices", "cpu",
                         "--no-progress")
    assert code == 0, err
    # one line per trial, naming its arm's study; the worker says once why it stopped
    assert "(--n-trials)" not in err
    assert err.count("stopped:") == 1, err
    assert "stopped: nothing left to run in the comparison · this worker's trials: 8 complete" in err
    for study in ("cmp:p=1:tune", "cmp:p=2:tune", "cmp:p=1:folds", "cmp:p=2:folds"):
        for number in (0, 1):
            assert f"{study}: trial {number} COMPLETE" in err

    code, out, err = cli(capsys, *args)  # all done: compare says so, and no "start workers"
    assert code == 0, err
    assert "start workers" not in err and "trial(s) of preset" not in err
    assert "nothing left: every arm is tuned and replicated" in out

    code, out, err = cli(capsys, "status", "--study", "cmp", "--storage", sqlite_url)
    assert code == 0, err
    assert out.splitlines()[0] == "study cmp · comparison · preset smoke"
    for wrong in ("sampler None", "pruner None", "no trial has finished yet", "nan", "next "):
        assert wrong not in out, (wrong, out)
    assert "arms     2 arms · tuning 4/4 trials · folds 4/4 runs · nothing left" in out
    # the reference arm's row: its mean, and no difference to itself
    data = load_compare(sqlite_url, "cmp")
    ref_mean = data.folds[data.folds["arm"] == "p=2"]["value"].mean()  # its two folds, from the frame
    reference_row = next(line for line in out.splitlines() if line.lstrip().startswith("p=2") and "reference" in line)
    assert reference_row.split() == ["p=2", "2", f"{ref_mean:.4f}", "reference", "–", "–", "–"]

    status = json.loads(cli(capsys, "status", "--study", "cmp", "--storage", sqlite_url, "--json")[1])
    assert {k: status["comparison"][k] for k in ("tuning_spent", "tuning_total", "cells_done", "cells_total",
                                                 "left", "done")} == {
        "tuning_spent": 4, "tuning_total": 4, "cells_done": 4, "cells_total": 4, "left": 0, "done": True}

    at = _home(sqlite_url, "cmp")
    assert _metrics(at) == {"Arms": "2", "Tuning trials": "4 / 4", "Fold runs": "4 / 4", "Left": "0"}
    shown = " ".join(str(node.value) for node in [*at.info, *at.success, *at.markdown, *at.caption])
    assert "NAME" not in shown and "lpstudy worker" not in shown and "Start workers" not in shown
    assert [s.value for s in at.success] == [
        "Every arm is tuned and replicated: the Compare page pairs them fold by fold."]


def test_compare_requires_a_preset_as_replicate_does(sqlite_url, capsys):
    # its cost is on --help, with every costly command's (tests/test_first_run.py)
    code, _, err = cli(capsys, "compare", "--study", "c", "--storage", sqlite_url, "--p", "1,2")
    assert code == 2 and "Missing option '--preset'" in err and err.count("\n") == 1
