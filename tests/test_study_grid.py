"""A grid (the paper's protocol) pulled by several worker processes runs each cell exactly once, on
PostgreSQL and on SQLite, with a metrics row for every evaluation; `replicate` run twice resumes."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from optuna.trial import TrialState

from tests.study_helpers import TINY, TINY_EVALS, cli, metrics_steps, start_worker, trials_of, wait_all

P_VALUES = "1,2,3"  # × 4 folds = 12 cells


def _replicate(capsys, storage: str, study: str, *extra: str, p: str = P_VALUES) -> tuple[int, str]:
    code, _, err = cli(capsys, "replicate", "--study", study, "--storage", storage, "--preset", "smoke",
                       "--p", p, "--folds", "4", *TINY, *extra)
    return code, err


def _check_grid_complete(storage: str, study: str, n_cells: int = 12) -> None:
    trials = trials_of(storage, study)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == n_cells, Counter(t.state.name for t in trials)
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    cells = Counter((t.user_attrs["p"], t.user_attrs["fold"]) for t in complete)
    assert set(cells.values()) == {1}, "some cell ran twice"
    assert set(cells) == {(p, f) for p in (1.0, 2.0, 3.0) for f in range(4)}
    for t in complete:
        assert t.params["p"] == t.user_attrs["p"] and t.params["fold"] == t.user_attrs["fold"]
        assert math.isfinite(t.value) and t.value == pytest.approx(t.user_attrs["final_val_loss"])
        assert sorted(t.intermediate_values) == [0, 10, 20, 30]
    steps = metrics_steps(storage, study)
    for t in complete:
        assert steps.get(t._trial_id) == [0, 10, 20, 30][:TINY_EVALS], f"trial {t.number} lacks metrics rows"


@pytest.mark.slow
@pytest.mark.postgres
def test_four_workers_on_postgres_run_each_cell_once(pg_url, tmp_path, capsys):
    code, err = _replicate(capsys, pg_url, "grid")
    assert code == 0, err
    assert "12 cells" in err
    workers = [start_worker("grid", pg_url, log=tmp_path / f"w{i}.log") for i in range(4)]
    codes = wait_all(workers)
    logs = [(tmp_path / f"w{i}.log").read_text() for i in range(4)]
    assert codes == [0, 0, 0, 0], logs
    assert all("no grid cell left" in log for log in logs), logs
    _check_grid_complete(pg_url, "grid")
    # every worker took part (4 processes, 12 cells): the cells were shared, not run by one
    hosts = Counter(t.user_attrs["pid"] for t in trials_of(pg_url, "grid"))
    assert len(hosts) >= 2


@pytest.mark.slow
def test_two_worker_processes_on_sqlite_run_each_cell_once_and_replicate_resumes(sqlite_url, tmp_path, capsys):
    code, err = _replicate(capsys, sqlite_url, "grid")
    assert code == 0, err
    # the next command names the storage it was given (as URL: a password never shows)
    assert "start workers anywhere: lpstudy worker --study grid --storage URL; " in err, err
    assert "then: lpstudy status --study grid --storage URL" in err, err
    code, err = _replicate(capsys, sqlite_url, "grid")  # resumes: nothing enqueued twice
    assert code == 0 and "resumed" in err and "0 enqueued now" in err, err
    assert len(trials_of(sqlite_url, "grid")) == 12
    # one command, two worker processes: --devices cpu,cpu fans out one process per device
    parent = start_worker("grid", sqlite_url, log=tmp_path / "w.log", devices="cpu,cpu")
    assert wait_all([parent]) == [0], (tmp_path / "w.log").read_text()
    log = (tmp_path / "w.log").read_text()
    assert "started 2 worker process(es) on cpu, cpu" in log and log.count("no grid cell left") == 2
    _check_grid_complete(sqlite_url, "grid")
    pids = {t.user_attrs["pid"] for t in trials_of(sqlite_url, "grid")}
    assert len(pids) == 2 and parent.pid not in pids
    # a third run finds every cell done and enqueues nothing
    code, err = _replicate(capsys, sqlite_url, "grid")
    assert code == 0 and "12 done" in err and "0 enqueued now" in err, err
    assert len(trials_of(sqlite_url, "grid")) == 12
    # a different protocol under the same name is refused, not merged
    code, err = _replicate(capsys, sqlite_url, "grid", p="1,4")
    assert code == 2 and "another spec" in err and err.count("\n") == 1, err


def test_a_grid_made_under_another_default_pruner_is_the_same_grid(sqlite_url, capsys):
    # A grid never prunes, so its pruner tells no two grids apart: a grid created when the default
    # pruner was the median one is found unchanged under today's default (and resumes).
    grid = ["--storage", sqlite_url, "--preset", "smoke", "--sampler", "grid", "--p", "1,3", "--fold", "0,1", *TINY]
    code, _, err = cli(capsys, "create", "--study", "old", *grid, "--pruner", "median")
    assert code == 0 and "created" in err, err
    for pruner in ([], ["--pruner", "none"]):
        code, _, err = cli(capsys, "create", "--study", "old", *grid, *pruner)
        assert code == 0 and "exists already, unchanged" in err and "0 cell(s) enqueued" in err, err
        assert "pruner median" in err and "pruner sha" not in err and "pruner none" not in err, err  # the stored one
    # a search does prune: there the pruner is part of the study
    search = ["--storage", sqlite_url, "--preset", "smoke", *TINY]
    code, _, err = cli(capsys, "create", "--study", "s", *search, "--pruner", "median")
    assert code == 0, err
    code, _, err = cli(capsys, "create", "--study", "s", *search)  # no --pruner: the study as it is stored
    assert code == 0 and "exists already, unchanged" in err and "pruner median" in err, err
    code, _, err = cli(capsys, "create", "--study", "s", *search, "--pruner", "none")
    assert code == 2 and "another spec" in err and "--pruner none would change pruner median to pruner none" in err, err
