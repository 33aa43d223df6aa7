"""`replicate --until-decided --seeds S`: the stages add folds, each with its S seeds inside; every
(p, fold, seed) cell runs once; a look reads the seeded corrected t over its folds' seeds, against
boundaries at the information fraction n/K (lpstudy.results.answers.sequential: conservative)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lpstudy.errors import UserError
from lpstudy.results.answers.sequential import boundaries, information, rounds_of, sequential_verdicts
from lpstudy.design.spec import replicate_spec
from lpstudy.study.studies import spec_sha256
from lpstudy.training.config import seeds_inside

PLAN = {"rounds": [3, 5, 6], "reference": 2.0, "rope": 0.05, "alpha": 0.05}


def test_seeds_go_with_until_decided_and_the_spec_of_a_study_without_them_is_unchanged():
    spec = replicate_spec("smoke", [1, 2], 6, options={"seeds": 2}, until_decided=PLAN)
    first = spec.first_round_cells()
    assert Counter((int(c["fold"]), int(c["seed"])) for c in first) == {
        (f, s): 2 for f in range(3) for s in seeds_inside(0, 2)}  # the first stage: folds 0-2, both seeds
    assert spec.to_plain()["until_decided"] == PLAN
    # made without --seeds, the stored spec (and so its identity) is what older code wrote and reads
    plain = replicate_spec("smoke", [1, 2], 6, until_decided={"rounds": [3, 5, 6]}).to_plain()
    assert "seeds" not in plain and "seed" not in plain["space"]
    assert plain["until_decided"] == {"rounds": [3, 5, 6], "reference": 2.0}
    assert spec_sha256(plain) == spec_sha256(replicate_spec("smoke", [1, 2], 6, until_decided={"rounds": [3, 5, 6]})
                                             .to_plain())
    with pytest.raises(UserError, match="--repeats and --until-decided do not go together yet: .*--seeds S with it"):
        replicate_spec("smoke", [1, 2], 6, options={"repeats": 2}, until_decided=PLAN)


def test_a_comparison_still_refuses_seeds_beside_its_stages_and_says_what_runs_instead():
    from lpstudy.study.compare import make_plan

    with pytest.raises(UserError, match="replicate --until-decided --seeds S"):
        make_plan("p", ["1", "2"], ["lr"], 2, 6, "smoke", until_decided={"rounds": [3, 5, 6]}, seeds=2)


def test_seeded_looks_use_the_lower_bound_of_the_information_fraction():
    """n/K, below the unseeded fraction (the first 3 of 10 folds: 0.30, not 0.47), so the first
    boundary is higher: the boundaries assume the looks correlate less than they can."""
    assert information([3, 5, 10], 10, seeded=True) == pytest.approx([0.3, 0.5, 1.0])
    assert information([3, 5, 10], 10)[0] == pytest.approx(0.475, abs=1e-3)
    seeded, plain = boundaries([3, 5, 10], 10, 0.05, seeded=True), boundaries([3, 5, 10], 10, 0.05)
    assert seeded[0] > plain[0] and seeded[-1] < 2.2


def test_a_large_k_has_stages_that_double_past_ten_folds():
    """K = 48 (the smoke preset's design with seeds): looks at 20 and 40 folds, not one jump from 10 to
    48, where the first looks' boundaries spend almost nothing; K up to 20 keeps its stages."""
    assert rounds_of(48) == [3, 5, 8, 10, 20, 40, 48]
    assert rounds_of(20) == [3, 5, 8, 10, 20] and rounds_of(21) == [3, 5, 8, 10, 21] and rounds_of(6) == [3, 5, 6]


def _planted(rng, studies: int, k: int, seeds: int, sigma_fold: float, sigma_seed: float, effect: float):
    """(studies, 1 arm, k·seeds) differences, fold-major: a partition term per fold (its share 1/K shared
    by every fold, as K-fold CV correlates them) and the fold's seeds each with their own noise."""
    shared = rng.normal(0, sigma_fold * np.sqrt(1 / k), (studies, 1, 1))
    own = rng.normal(0, sigma_fold * np.sqrt(1 - 1 / k), (studies, 1, k))
    partition = np.repeat(shared + own, seeds, axis=-1)
    return effect + partition + rng.normal(0, sigma_seed, (studies, 1, k * seeds))


@pytest.mark.parametrize("sigma_fold", [0.005, 0.010])
def test_no_effect_gives_a_false_better_or_worse_at_most_at_the_stated_rate_over_the_looks(sigma_fold):
    """2,000 planted studies, K = 10 in stages of 3, 5, 8, 10, four seeds a fold, no effect: the stages
    call an arm better or worse in at most 5 % of them (Wilson's upper bound); the fold-major columns
    read as folds (`folds=`)."""
    from lpstudy.intervals import wilson_interval

    rng = np.random.default_rng(11)
    k, seeds = 10, 4
    x = _planted(rng, 2000, k, seeds, sigma_fold, 0.034, 0.0)
    out = sequential_verdicts(x, k, 0.0125, 0.05, [3, 5, 8, 10], folds=np.repeat(np.arange(k), seeds))
    wrong = int(np.isin(out.verdict[:, 0], [0, 2]).sum())
    assert wilson_interval(wrong, 2000)[0] <= 0.05, wrong


def test_a_look_reads_every_seed_of_its_folds_and_only_those():
    """A stage of 3 folds × 2 seeds: positions 0-5 of a fold-major row; what later folds hold (here a
    huge difference) does not reach the first look, and every seed of its folds does."""
    folds = np.repeat(np.arange(6), 2)
    x = np.array([[[0.001, 0.001, 0.001, 0.004, 0.004, 0.001, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0]]])
    out = sequential_verdicts(x, 6, 0.05, 0.05, [3, 5, 6], looks_done=1, folds=folds)
    assert out.verdict[0, 0] == 1 and out.folds_used[0, 0] == 3  # equivalent at the first look
    assert out.mean[0, 0] == pytest.approx(0.002)


def test_the_stages_run_each_fold_with_its_seeds_and_every_cell_once(sqlite_url):
    """K = 6 in stages of 3, 5, 6 with two seeds a fold, ROPE ±5 %: p = 1 (0.1 % above p = 2 on every
    run) is equivalent at the first look and runs folds 0-2 with both seeds only; p = 4 (±10 % run by
    run, at random) runs every fold with both seeds; a second worker's next_stage adds nothing; the verdict counts
    the runs as (fold, seed) cells."""
    from optuna.trial import TrialState

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.reading.compare import verdict_data
    from lpstudy.study.replicate import replicate
    from lpstudy.study.stages import ENQUEUED, OVER, WAIT, next_stage
    from lpstudy.design.until_decided import UntilDecided

    store = open_storage(sqlite_url, create_tables=True)
    result = replicate(store, "seq", "smoke", [1, 2, 4], 6, options={"seeds": 2}, until_decided=PLAN)
    assert result.enqueued == 3 * 3 * 2
    seeds = seeds_inside(0, 2)
    rng = np.random.default_rng(4)
    ref = {(f, s): 2.8 + rng.normal(0, 0.05) for f in range(6) for s in seeds}
    swing = {(f, s): rng.normal(0, 0.3) for f in range(6) for s in seeds}
    loss = {1.0: {c: v * 1.001 for c, v in ref.items()}, 2.0: ref,
            4.0: {c: v + swing[c] for c, v in ref.items()}}
    import optuna

    study = optuna.load_study(study_name="seq", storage=store.optuna)

    def run_waiting(leave_running=None):
        for t in study.get_trials():
            if t.state != TrialState.WAITING:
                continue
            if t.system_attrs["fixed_params"] == leave_running:
                store.optuna.set_trial_state_values(t._trial_id, TrialState.RUNNING)
                continue
            cell = t.system_attrs["fixed_params"]
            p, fold, seed = float(cell["p"]), int(cell["fold"]), int(cell["seed"])
            store.optuna.set_trial_state_values(t._trial_id, TrialState.RUNNING)
            value = loss[p][(fold, seed)]
            for key, x in {"fold": fold, "folds": 6, "p": p, "seed": seed, "diverged": False,
                           "final_val_loss": value}.items():
                store.optuna.set_trial_user_attr(t._trial_id, key, x)
            store.optuna.set_trial_state_values(t._trial_id, TrialState.COMPLETE, [value])

    def cells():
        return Counter((float(c["p"]), int(c["fold"]), int(c["seed"]))
                       for c in (t.system_attrs["fixed_params"] for t in study.get_trials()))

    plan = UntilDecided.from_plain(PLAN)
    run_waiting(leave_running={"seed": seeds[1], "p": 2.0, "fold": 2})
    interim = study_answer(verdict_data(store, "seq", curves=False), stage_options(plan)).to_json()
    assert interim["sequential"]["looks_done"] == 0  # fold 2 of the reference has a seed still running
    assert next_stage(store, "seq") == WAIT
    running = [t for t in study.get_trials() if t.state == TrialState.RUNNING][0]
    store.optuna.set_trial_state_values(running._trial_id, TrialState.WAITING)
    run_waiting()
    assert next_stage(store, "seq") == ENQUEUED
    assert next_stage(store, "seq") == WAIT  # a second worker finds the stage open and adds nothing
    assert {p for p, f, _ in cells() if f >= 3} == {2.0, 4.0}  # p = 1 decided after 3 folds
    run_waiting()
    assert next_stage(store, "seq") == ENQUEUED
    run_waiting()
    assert next_stage(store, "seq") == OVER
    ran = cells()
    assert set(ran.values()) == {1}  # every (p, fold, seed) cell once
    assert {(p, f) for p, f, _ in ran} == {(1.0, f) for f in range(3)} | {(p, f) for p in (2.0, 4.0) for f in range(6)}
    assert all(sum(1 for q, g, _ in ran if (q, g) == (p, f)) == 2 for p, f, _ in ran)  # both seeds of each fold
    answer = study_answer(verdict_data(store, "seq", curves=False), stage_options(plan)).to_json()
    seq = answer["sequential"]
    assert seq["over"] and seq["stopped"] == {"1.0": 3}
    assert seq["cells_max"] == 3 * 6 * 2 and seq["cells_run"] == len(ran) == 30
    assert seq["folds_saved"] == 6
    assert seq["looks"][0]["information"] == pytest.approx(0.5)
    assert answer["method"].endswith("at the information fraction n/K (its lower bound: conservative)")
    arms = {a["p"]: a for a in answer["arms"]}
    assert arms[1.0]["verdict"] == "equivalent" and arms[4.0]["verdict"] == "undecided"
    assert arms[4.0]["seeds"] == 2 and arms[4.0]["sigma_seed"] is not None
    store.close()


def test_an_endpoint_of_a_study_whose_stages_are_over_is_read_over_the_folds_it_ran():
    """Every arm stopped at 4 of K = 6 folds (the stages over): the folds never run are not runs to come,
    so a convergence or stability endpoint gets its verdict over the folds run, not an interim reading;
    while the stages run, the same table is one."""
    import pandas as pd

    from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts

    ran = [100.0, 110.0, 90.0, 105.0, np.nan, np.nan]
    table = pd.DataFrame([ran, [r + 0.5 + 0.1 * i if r == r else r for i, r in enumerate(ran)]], index=[2.0, 4.0],
                         columns=pd.Index(range(6), name="fold"))
    (over,) = endpoint_verdicts(table, 2.0, k=6, margin=5.0, stages_over=True)
    assert not over.interim and over.verdict == "equivalent" and over.n_folds == 4
    (running,) = endpoint_verdicts(table, 2.0, k=6, margin=5.0)
    assert running.interim and running.verdict == "undecided"
