"""What the commands say, where a word was wrong: an estimate mentions pruning only where a pruner
may stop trials; counts agree with their nouns; `replay` says what its table's columns mean and
how to get its chart, which it writes only when asked."""

from __future__ import annotations

import pytest

from lpstudy.cli.common import work_estimate
from lpstudy.results.replay.grid_table import GridTable, Run, write_table
from lpstudy.training.costs import study_estimate
from tests.study_helpers import cli

STEPS = (0, 10, 20, 30)


def test_an_estimate_mentions_pruned_trials_only_where_a_pruner_may_stop_them():
    assert "pruned" not in study_estimate(8, "smoke", 2, gpu=False, pruned=False)
    assert "(pruned trials end sooner)" in study_estimate(8, "smoke", 2, gpu=False, pruned=True)
    # what `replicate --workers N` says before it starts: a grid, no pruner
    assert "pruned" not in work_estimate(4, "smoke", {}, workers=2, devices="cpu")


def test_compare_says_one_tuning_trial_not_one_tuning_trials(sqlite_url, capsys):
    code, _, err = cli(capsys, "compare", "--study", "one", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--budget", "1", "--folds", "2")
    assert code == 0, err
    assert "· 1 tuning trial each on fold 0 ·" in err, err
    code, _, err = cli(capsys, "compare", "--study", "two", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--budget", "2", "--folds", "2")
    assert code == 0, err
    assert "· 2 tuning trials each on fold 0 ·" in err, err


@pytest.fixture
def grid_file(tmp_path):
    """A hand-made grid of 3 learning rates × 2 folds, curves straight down to their final loss."""
    finals = {1e-3: (1.9, 1.95), 1e-2: (1.85, 2.1), 1e-1: (2.5, 2.6)}
    lrs = list(finals)
    runs = {(i, f): Run(steps=STEPS, val_loss=tuple(4.0 + (finals[lr][f] - 4.0) * s / 30 for s in STEPS),
                        steps_run=30, value=finals[lr][f]) for i, lr in enumerate(lrs) for f in (0, 1)}
    table = GridTable(params=("lr",), values={"lr": lrs}, configs=[(lr,) for lr in lrs], folds=[0, 1], runs=runs,
                      preset="smoke", fixed={"max_steps": 30, "eval_interval": 10, "warmup_steps": 10,
                                             "eval_iters": 2, "folds": 10})
    return write_table(table, tmp_path / "g.json.gz")


def test_replay_explains_its_columns_and_how_to_get_the_chart_it_did_not_write(grid_file, capsys):
    code, _, err = cli(capsys, "replay", "--grid", str(grid_file), "--seeds", "2", "--methods", "random+none",
                       "--no-progress")
    assert code == 0, err
    legend = [line for line in err.splitlines() if line.startswith("within 2 % (1 %): ")]
    assert len(legend) == 1, err  # one line under the table, every column of it
    for word in ("mean loss over all the grid's folds", "mean regret:", "search efficiency: reach ε",
                 "the fold it was tuned on, at the end of --budget", "fraction of the grid's compute", "within ε",
                 "generalisation: other folds", "ever:", "capped:"):
        assert word in legend[0], (word, legend[0])
    assert "chart: none written; add --chart replay.png" in err, err
    assert sorted(p.name for p in grid_file.parent.iterdir()) == ["g.json.gz"]  # no chart unless asked


def test_an_estimate_counts_the_workers_start_and_how_busy_the_machine_is():
    """8 smoke trials (3.5 s each on one idle thread) on 2 workers: 4 waves; the command's own 4.1 CPU
    seconds and a worker's start of 2.7 added; on 2 cores where 8 other threads want a core, each of the
    2 workers' threads and the command's polling one gets 2/11 of a core (×5.5; the command alone,
    ×4.5): 4.1×4.5 + 2.7×5.5 + 4×3.5×5.5 = 110.3 s. Idle, 2 workers and the command on 2 cores: ×1.5."""
    from lpstudy.training.costs import Machine

    idle = study_estimate(8, "smoke", 2, gpu=False, machine=Machine(cores=2, others=0.0))
    assert idle == ("8 trial(s) of preset smoke, ≈ 4 s each on 1 CPU thread; 2 worker(s): about 29 s, starting them "
                    "included; 3 threads on 2 cores: ×1.5 included")
    busy = study_estimate(8, "smoke", 2, gpu=False, machine=Machine(cores=2, others=8.0))
    assert busy == ("8 trial(s) of preset smoke, ≈ 4 s each on 1 CPU thread; 2 worker(s): about 1 min 50 s, starting "
                    "them included; the machine is busy (about 8 other threads want its 2 cores): ×5.5 included")
