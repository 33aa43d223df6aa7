"""`lpstudy compare --until-decided`: the replicate phase runs in the stages of `replicate
--until-decided` (the same verdicts, spending and Holm across arms); a decided arm gets no more folds,
every cell runs once with two workers, and status and verdict show the stages."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.study_helpers import cli, lp_env, lpstudy, trials_of

QUICK = ["--set", "max_steps=20", "--set", "eval_interval=10", "--set", "eval_iters=1"]


def test_max_folds_goes_with_until_decided(sqlite_url, capsys):
    code, _, err = cli(capsys, "compare", "--study", "c", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--max-folds", "6")
    assert code == 2 and err.strip() == ("lpstudy: error: --max-folds goes with --until-decided "
                                         "(without it, --folds sets K)")


def test_a_comparison_without_until_decided_keeps_its_plan():
    from lpstudy.study.compare import make_plan

    plain = make_plan("p", ["1", "2"], ["lr"], 2, 3, "smoke").to_plain()
    assert "until_decided" not in plain  # plans made before --until-decided compare equal on resume
    staged = make_plan("p", ["1", "2"], ["lr"], 2, 6, "smoke", until_decided={"rounds": [3, 5, 6]})
    assert staged.to_plain()["until_decided"] == {"rounds": [3, 5, 6]}


@pytest.mark.slow
def test_compare_until_decided_stops_an_arm_before_max_folds_and_runs_every_cell_once(tmp_path, corpus_path):
    """Smoke preset, 20 steps, K = 6 (stages 3, 5, 6), two local workers: after 20 steps the arms'
    losses differ by far less than the ±20 % ROPE, so an arm is decided before the sixth fold."""
    url = f"sqlite:///{tmp_path / 'cmp.db'}"
    done = lpstudy("compare", "--study", "cmp", "--storage", url, "--preset", "smoke", "--p", "1,2,4",
                   "--budget", "2", "--sampler-seed", "5", *QUICK, "--until-decided", "--max-folds", "6",
                   "--rope", "0.2", "--workers", "2", "--data", str(corpus_path), env=lp_env(), timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    folds = {}
    for arm in ("p=1", "p=2", "p=4"):
        cells = Counter(int(t.params["fold"]) for t in trials_of(url, f"cmp:{arm}:folds"))
        assert set(cells.values()) == {1}, (arm, cells)  # every cell once
        assert set(cells) == set(range(len(cells))), (arm, cells)  # the first folds of the one 6-fold CV
        folds[arm] = len(cells)
    assert folds["p=2"] == max(folds.values()) and min(folds.values()) < 6, folds  # an arm stopped before K
    answer = json.loads(lpstudy("verdict", "--study", "cmp", "--storage", url, "--json").stdout)
    seq = answer["sequential"]
    assert seq["over"] and seq["folds_saved"] == 3 * 6 - sum(folds.values()) > 0
    assert seq["stopped"] and all(folds[arm] == n < 6 for arm, n in seq["stopped"].items())  # no fold after its verdict
    assert {arm["verdict"] for arm in answer["arms"] if arm["value"] in seq["stopped"]} <= {"equivalent", "better", "worse"}
    status = lpstudy("status", "--study", "cmp", "--storage", url)
    assert status.returncode == 0, status.stderr
    assert "stages of 3/5/6 folds" in status.stdout and "fold runs saved against --max-folds 6" in status.stdout
    assert "nothing left" in status.stdout  # the decided arms' folds are not counted as left


def planted_compare(losses: dict[str, list[float]]):
    """A comparison of p = 1, 2, 4 run --until-decided with K = 6 (stages 3, 5, 6), every arm tuned
    (two trials each) and these fold losses planted on its replicate grid."""
    import pandas as pd

    from lpstudy.results.reading.compare import CompareData
    from lpstudy.study.compare import make_plan

    plan = make_plan("p", ["1", "2", "4"], ["lr"], 2, 6, "smoke", until_decided={"rounds": [3, 5, 6], "rope": 0.05})
    tuning = pd.DataFrame([{"arm": arm, "number": i, "state": "COMPLETE", "value": 3.0} for arm in losses for i in range(2)])
    folds = pd.DataFrame([{"arm": arm, "number": n, "trial_id": n + 1, "state": "COMPLETE", "value": loss,
                           "fold": fold, "folds": 6, "diverged": False, "final_val_loss": loss}
                          for n, (arm, fold, loss) in enumerate((a, f, v) for a, vs in losses.items()
                                                                 for f, v in enumerate(vs))])
    return CompareData("cmp", plan, tuning, folds, "p=2")


def test_a_decided_arm_has_no_folds_left_and_the_undecided_one_runs_on():
    """After the first stage, p = 1 (within 0.1 % of p = 2 on every fold, ROPE ±5 %) is decided
    equivalent and has no folds left; p = 4 (±10 % apart fold by fold) is undecided and has 3 left."""
    from lpstudy.results.reading.compare import compare_progress, stages_answer

    ref = [2.80, 2.90, 2.70]
    data = planted_compare({"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
                            "p=4": [ref[0] + 0.3, ref[1] - 0.25, ref[2] + 0.28]})
    seq = stages_answer(data).sequential
    assert seq.looks_done == 1 and not seq.over and seq.rounds == [3, 5, 6]
    assert seq.stopped == {"p=1": 3}
    assert {a.arm: a.state for a in seq.arms} == {"p=1": "equivalent", "p=4": "running"}
    left = {r.arm: r.folds_left for r in compare_progress(data).arms}
    assert left == {"p=1": 0, "p=2": 3, "p=4": 3}


def test_the_stages_table_says_which_arms_run_the_stage_under_way():
    """After the first stage: p = 1 decided equivalent there, p = 4 runs the second stage; the third is to come."""
    from lpstudy.results.reading.compare import stages_answer
    from lpstudy.results.tables.verdicts import stages_frame

    ref = [2.80, 2.90, 2.70]
    data = planted_compare({"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
                            "p=4": [ref[0] + 0.3, ref[1] - 0.25, ref[2] + 0.28]})
    stages = stages_frame(stages_answer(data))
    assert stages[["look", "folds_run", "p = 1", "p = 4"]].values.tolist() == [
        [1, 3, "equivalent", "undecided"], [2, 5, "stopped (equivalent)", "running"],
        [3, 6, "stopped (equivalent)", "to come"]]


def test_once_every_arm_is_decided_nothing_is_left():
    from lpstudy.results.reading.compare import compare_progress

    ref = [2.80, 2.90, 2.70]
    data = planted_compare({"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
                            "p=4": [v - 0.001 - 0.0001 * i for i, v in enumerate(ref)]})
    progress = compare_progress(data)
    assert progress.done and progress.cells_left == 0


def test_the_workers_stage_logic_on_planted_losses_gives_decided_arms_no_more_folds(sqlite_url, monkeypatch):
    """Through the database: every arm tuned (two planted trials), then the worker's stages
    (lpstudy.study.stages.Stages) around the comparison's choice of study (next_study) as a worker
    asks them, with the planted fold losses written as the cells' results. p = 1 (within 0.1 % of p = 2) is
    decided after the first stage and gets no fourth fold; p = 4 (±10 % fold by fold) runs to K = 6;
    a second worker at the same moment enqueues nothing twice. Every stage is checked, read and
    enqueued on the worker's one storage: no URL made a storage again, no engine made."""
    import optuna
    import sqlalchemy as sa

    import lpstudy.db.kinds as kinds
    import lpstudy.db.optuna_storage as optuna_storage
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.compare import create_compare, make_plan, next_study
    from lpstudy.study.decisions import Done, Wait
    from lpstudy.study.stages import WAIT, Stages, next_stage

    store = open_storage(sqlite_url, create_tables=True)
    plan = make_plan("p", ["1", "2", "4"], ["lr"], 2, 6, "smoke", until_decided={"rounds": [3, 5, 6], "rope": 0.05})
    create_compare(store, "cmp", plan)
    for value in plan.values:
        tune = optuna.load_study(study_name=plan.tune_study("cmp", value), storage=store.optuna)
        for i in range(2):
            tune.add_trial(optuna.trial.create_trial(
                params={"lr": 1e-3 * (i + 1)}, distributions={"lr": FloatDistribution(1e-4, 1e-2, log=True)},
                value=3.0 + i, user_attrs={"lr": 1e-3 * (i + 1), "fold": 0}))
    ref = [2.80, 2.90, 2.70, 2.85, 2.75, 2.80]
    losses = {"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
              "p=4": [v + d for v, d in zip(ref, [0.3, -0.25, 0.28, -0.2, 0.3, -0.1])]}
    opened = []
    for module in (kinds, optuna_storage):
        monkeypatch.setattr(module, "storage_at", lambda *a, **k: opened.append("storage") or pytest.fail("a storage made"))
    monkeypatch.setattr(sa, "create_engine", lambda *a, **k: opened.append("engine") or pytest.fail("an engine made"))

    def folds_of(label):
        value = {plan.label(v): v for v in plan.values}[label]
        study = optuna.load_study(study_name=plan.folds_study("cmp", value), storage=store.optuna)
        return study, sorted(t.system_attrs["fixed_params"]["fold"] for t in study.get_trials())

    def run_waiting():
        for label in losses:
            study, _ = folds_of(label)
            for t in study.get_trials():
                if t.state != TrialState.WAITING:
                    continue
                fold = t.system_attrs["fixed_params"]["fold"]
                store.optuna.set_trial_state_values(t._trial_id, TrialState.RUNNING)
                for key, x in {"fold": fold, "folds": 6, "p": float(label[2:]), "diverged": False,
                               "final_val_loss": losses[label][fold]}.items():
                    store.optuna.set_trial_user_attr(t._trial_id, key, x)
                store.optuna.set_trial_state_values(t._trial_id, TrialState.COMPLETE, [losses[label][fold]])

    class Arms:  # the comparison's choice of study, as its worker's decider asks it, taking no trial
        def start(self, sources):
            return ""

        def claim(self, done):
            target = next_study(store, "cmp", plan)
            return Wait(0) if isinstance(target, str) else target  # a study to take from: work to do

    stages = Stages(Arms(), store, "cmp")
    stages.start(type("Quiet", (), {"say": staticmethod(lambda message: None)})())

    def next_target():
        """What the worker's loop is told: Wait (a stage enqueued, cells to take) until nothing is left."""
        return stages.next(0)

    assert not isinstance(next_target(), Done)
    assert {label: folds_of(label)[1] for label in losses} == {label: [0, 1, 2] for label in losses}
    run_waiting()
    assert not isinstance(next_target(), Done)
    assert next_stage(store, "cmp") is WAIT  # a second worker finds the stage open and adds nothing
    assert {label: folds_of(label)[1] for label in losses} == {"p=2": [0, 1, 2, 3, 4], "p=1": [0, 1, 2],
                                                                "p=4": [0, 1, 2, 3, 4]}
    run_waiting()
    assert not isinstance(next_target(), Done)
    run_waiting()
    assert next_target() == Done("every arm is decided or the last stage ran (lpstudy verdict shows them)")
    assert {label: folds_of(label)[1] for label in losses} == {"p=2": list(range(6)), "p=1": [0, 1, 2],
                                                                "p=4": list(range(6))}
    assert opened == []


def test_verdict_prints_each_arms_state_at_every_look(sqlite_url, capsys):
    """K = 6 in stages of 3, 5, 6, ROPE ±5 %: p = 1 (about 0.07 % above p = 2 on each fold) is equivalent at
    the first look and ran 3 folds; p = 4 (±10 % fold by fold) stays undecided and ran all 6."""
    from tests.staged_studies import write_staged_compare

    ref = [2.80, 2.90, 2.70, 2.85, 2.75, 2.80]
    write_staged_compare(sqlite_url, "cmp", {"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref[:3])],
                                             "p=4": [v + d for v, d in zip(ref, [0.3, -0.25, 0.28, -0.2, 0.3, -0.1])]},
                         max_folds=6, rounds=[3, 5, 6], rope=0.05)
    code, out, err = cli(capsys, "verdict", "--study", "cmp", "--storage", sqlite_url)
    assert code == 0, err
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "stages of 3/5/6 folds · 3 of 3 over · 3 of 18 fold runs saved against --max-folds 6" in lines
    assert "arms: p = 1: equivalent (3 folds), p = 4: undecided (6 folds)" in lines
    table = " ".join(lines[lines.index("stages: each arm's state at every look") + 1:])
    # alpha spent by 2 − 2Φ(1.96 / √t), t the corrected variance's information fraction
    # (1/6 + 1/5) / (1/n + 1/5): 0.69 after 3 folds (0.018 spent), 0.92 after 5 (0.041), 1 after 6 (0.05)
    for look in ("look 1 · folds run 3 · alpha this look 0.018 · alpha so far 0.018 p = 1 equivalent · p = 4 undecided",
                 "look 2 · folds run 5 · alpha this look 0.023 · alpha so far 0.041 p = 1 stopped (equivalent) · p = 4 undecided",
                 "look 3 · folds run 6 · alpha this look 0.0094 · alpha so far 0.05 p = 1 stopped (equivalent) · p = 4 undecided"):
        assert look in table, table


def test_a_later_looks_json_names_the_stopped_arm_and_the_running_ones_interval():
    """After the second stage: at look 2, p = 1 (stopped at look 1) says what it was decided and at how
    many folds, p = 4 its state there with its relative interval; the keys in the order `lpstudy verdict
    --json` has always written them (the engine builds the stages typed: answer_types.StageArm)."""
    from lpstudy.results.reading.compare import stages_answer

    ref = [2.80, 2.90, 2.70, 2.85, 2.75]
    data = planted_compare({"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref[:3])],
                            "p=4": [ref[0] + 0.3, ref[1] - 0.25, ref[2] + 0.28, ref[3] - 0.3, ref[4] + 0.27]})
    sequential = stages_answer(data).to_json()["sequential"]
    assert sequential["looks_done"] == 2 and list(sequential["looks"][1]) == [
        "look", "folds", "level", "spent", "information", "boundary", "over", "arms"]
    stopped, running = sequential["looks"][1]["arms"]
    assert stopped == {"value": 1.0, "arm": "p=1", "state": "stopped", "decided": "equivalent", "folds": 3}
    assert list(stopped) == ["value", "arm", "state", "decided", "folds"]
    assert list(running) == ["value", "arm", "state", "folds", "rel_diff", "rel_low", "rel_high"]
    assert running["state"] == "undecided" and running["rel_low"] < running["rel_diff"] < running["rel_high"]
    assert list(sequential["arms"][0]) == ["value", "arm", "state", "folds"]
