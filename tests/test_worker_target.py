"""CPU workers share the cores (one command's CPU worker processes split them; --threads sets the
count, which each trial and its exported run file record), and a study's n_trials is a hard target
however many workers pull from it."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml
from optuna.trial import TrialState

from lpstudy.study.launch import cpu_threads
from lpstudy.training.threads import usable_cores as cpu_count
from tests.study_helpers import TINY, cli, start_worker, trials_of, wait_all


def test_local_cpu_workers_split_the_cores_unless_told(monkeypatch):
    monkeypatch.setattr("lpstudy.study.launch.usable_cores", lambda: 8)
    assert cpu_threads(["cpu"], None) is None  # one CPU worker: each run's default (training.threads)
    assert cpu_threads(["cpu", "cpu"], None) == 4
    assert cpu_threads(["cpu"] * 3, None) == 2
    assert cpu_threads(["cpu"] * 17, None) == 1  # never none
    assert cpu_threads(["cpu", "cpu"], 3) == 3
    assert cpu_threads(["cuda:0", "cuda:1"], None) is None


@pytest.mark.slow
def test_three_workers_end_a_study_of_8_trials_with_8_and_record_their_threads(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    code, _, err = cli(capsys, "create", "--study", "t", "--storage", url, "--preset", "smoke",
                       "--sampler", "random", "--pruner", "none", "--n-trials", "8", "--race-reserve", "0", *TINY)
    assert code == 0, err  # no race reserve: the target alone ends it (tests/test_races_reserve.py keeps the reserve's)
    # one command, three CPU worker processes, two of them again with --threads 2
    parent = start_worker("t", url, log=tmp_path / "a.log", devices="cpu,cpu,cpu")
    second = start_worker("t", url, "--threads", "2", log=tmp_path / "b.log")
    assert wait_all([parent, second]) == [0, 0], (tmp_path / "a.log").read_text()
    trials = trials_of(url, "t")
    states = Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] == 8 and len(trials) == 8, states
    split = max(1, cpu_count() // 3)
    threads = Counter(t.user_attrs["threads"] for t in trials)
    assert set(threads) <= {split, 2}, threads
    by_pid = {t.user_attrs["pid"]: t.user_attrs["threads"] for t in trials}
    assert by_pid.get(second.pid, 2) == 2
    code, out, err = cli(capsys, "export", "--study", "t", "--storage", url, "--format", "yaml")
    assert code == 0, err
    run = yaml.safe_load(out)
    best = min((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
    assert run["threads"] == best.user_attrs["threads"]
