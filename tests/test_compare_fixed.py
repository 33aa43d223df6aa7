"""`lpstudy compare` tunes what --tune names and nothing else: a field left out of --tune is fixed
for every arm (at the preset's value, or at --set's), and each arm's fold replicates run exactly
the configuration of its best tuning trial."""

from __future__ import annotations

import math

import pytest

from tests.study_helpers import best_by_hand, cli, open_study, trials_of

QUICK = ["--set", "max_steps=20", "--set", "eval_interval=10", "--set", "eval_iters=1"]
# The smoke preset's context is L = 32: QKNorm's initial gain log2(L² − L), written out.
SMOKE_G0 = math.log2(32 ** 2 - 32)
# What a trial's run is, besides the fold it runs on, its training seed (the fold stage trains with seeds its
# tuning never ran: lpstudy.study.compare.ComparePlan.fold_seed) and the threads of the worker that ran it.
RUN_FIELDS = ("p", "lr", "gain_init", "gain_rule", "max_steps", "folds")


@pytest.mark.slow
def test_a_field_left_out_of_tune_is_fixed_and_the_replicates_run_the_best_tuned_run(sqlite_url, capsys):
    args = ["compare", "--study", "cmp", "--storage", sqlite_url, "--preset", "smoke", "--p", "1,2",
            "--tune", "lr", "--budget", "3", "--folds", "2", "--sampler-seed", "3", *QUICK]
    code, _, err = cli(capsys, *args)
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "cmp", "--storage", sqlite_url, "--devices", "cpu",
                       "--no-progress")
    assert code == 0, err

    for arm in ("p=1", "p=2"):
        _, spec = open_study(sqlite_url, f"cmp:{arm}:tune")
        assert [p.name for p in spec.space.searched] == ["lr"]  # the plan said tune: {lr}
        tuned = trials_of(sqlite_url, f"cmp:{arm}:tune")
        assert len(tuned) == 3
        for trial in tuned:
            assert set(trial.params) == {"lr"}, trial.params  # nothing else was sampled
            assert trial.user_attrs["gain_init"] == SMOKE_G0  # the preset's gain, in every tuning run
            assert trial.user_attrs["gain_rule"] == "default"
        best = best_by_hand(tuned)  # what the arm's search returns (its race's answer)
        runs = trials_of(sqlite_url, f"cmp:{arm}:folds")
        assert sorted(t.user_attrs["fold"] for t in runs) == [0, 1]
        for run in runs:
            assert {k: run.user_attrs[k] for k in RUN_FIELDS} == {k: best.user_attrs[k] for k in RUN_FIELDS}
        # measured where its choice did not look: no tuning run's seed on any fold
        assert not {r.user_attrs["seed"] for r in runs} & {t.user_attrs["seed"] for t in tuned}


def test_any_compared_field_leaves_p_and_the_gain_fixed_unless_tuned(sqlite_url, capsys):
    code, _, err = cli(capsys, "compare", "--study", "layers", "--storage", sqlite_url, "--preset", "smoke",
                       "--arms", "n_layer=1,2", "--tune", "lr", "--budget", "2", "--folds", "2",
                       "--set", "gain_init=matched", *QUICK)
    assert code == 0, err
    for arm in ("n_layer=1", "n_layer=2"):
        _, spec = open_study(sqlite_url, f"layers:{arm}:tune")
        assert [p.name for p in spec.space.searched] == ["lr"]
        assert spec.space.fixed["p"] == 2.0  # the preset's p, not a range of p
        assert spec.space.fixed["gain_init"] == "matched"  # the value --set gave
