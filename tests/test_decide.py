"""What would decide an undecided arm (answers.decide): the design it names reaches the stated 80 %
power when the arm's difference and spread are what they seem, it never names a design past what the
study can run, and the command it prints creates that study."""

from __future__ import annotations

import dataclasses
import json
import shlex

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.answers.decide import BEYOND, EQUIVALENCE, MAX_FOLDS, MAX_REPEATS, POWER, design_to_decide
from lpstudy.results.answers.fold_tests import beyond_p, corrected_stats, equivalence_p
from lpstudy.design.spec import StudySpec
from lpstudy.results.reading.frames import StudyData, StudyInfo
from tests.study_helpers import cli

N_STUDIES = 3000
MC = 1.96 * np.sqrt(POWER * (1 - POWER) / N_STUDIES)


def correlated_diffs(rng, studies: int, runs: int, k: int, mean: float, sd: float) -> np.ndarray:
    """Fold differences correlated at rho = 1/K (the corrected test's model, repeats included)."""
    rho = 1 / k
    shared = rng.normal(0, np.sqrt(rho) * sd, (studies, 1))
    return mean + shared + rng.normal(0, np.sqrt(1 - rho) * sd, (studies, runs))


def seeded_diffs(rng, studies: int, k: int, repeats: int, seeds: int, mean: float, sd: float, seed_sd: float) -> np.ndarray:
    """Runs of R repeats of K folds, S seeds in each (repeat, fold) cell: the partition's part correlated
    at 1/K inside a repeat and shared by a cell's seeds, the seeds' part independent from run to run."""
    partition = np.concatenate([correlated_diffs(rng, studies, k, k, 0.0, sd) for _ in range(repeats)], axis=1)
    return mean + np.repeat(partition, seeds, axis=1) + rng.normal(0, seed_sd, (studies, repeats * k * seeds))


def decided_share(diffs: np.ndarray, k: int, seeds: int, margin: float, test: str) -> float:
    """How often the verdict's own test decides (beyond the ROPE, or equivalent), at alpha 0.05."""
    cells = np.repeat(np.arange(diffs.shape[1] // seeds), seeds) if seeds > 1 else None
    m, se, df = corrected_stats(diffs, k, cells=cells)
    p = beyond_p(m, se, df, margin) if test == BEYOND else equivalence_p(m, se, df, margin)
    return float(np.mean(p < 0.05))


@pytest.mark.parametrize("mean,sd,seed_sd,k,margin,test", [
    (0.025, 0.02, None, 10, 0.01, BEYOND),  # an arm beyond the ROPE: planned on the test beyond it, not against 0
    (0.0, 0.01, None, 5, 0.02, EQUIVALENCE),
    (0.0, 0.004, 0.024, 10, 0.0125, EQUIVALENCE),  # the smoke preset's components (benchmarks/results/seeds.md)
    (0.02, 0.005, 0.024, 5, 0.005, BEYOND)])
def test_the_named_design_reaches_80_percent_power_with_the_verdicts_own_test(mean, sd, seed_sd, k, margin, test):
    design = design_to_decide(mean, sd, n=k, k=k, margin=margin, alpha=0.05, seed_sd=seed_sd)
    assert design.test == test and design.runs_per_arm
    assert design.runs_per_arm == design.folds * design.repeats * design.seeds
    assert design.seeds == 1 or seed_sd is not None  # one seed a cell: seeds buy nothing it can show
    rng = np.random.default_rng(1)
    diffs = seeded_diffs(rng, N_STUDIES, design.folds, design.repeats, design.seeds, mean, sd, seed_sd or 0.0)
    assert decided_share(diffs, design.folds, design.seeds, margin, test) >= POWER - MC - 0.01


def test_measured_seeds_make_a_cheaper_design_than_one_seed_a_fold_can_see():
    """Where the training noise is most of the spread, seeds inside the folds decide in fewer runs than
    the design that must take the whole spread as the partition's (benchmarks/results/seeds.md: σ_fold
    0.004, σ_seed 0.024 at the smoke preset)."""
    total = float(np.hypot(0.004, 0.024))
    blind = design_to_decide(0.0, total, n=10, k=10, margin=0.0125, alpha=0.05)
    seeded = design_to_decide(0.0, 0.004, n=10, k=10, margin=0.0125, alpha=0.05, seed_sd=0.024)
    assert seeded.seeds > 1 and seeded.runs_per_arm is not None
    assert blind.runs_per_arm is None or seeded.runs_per_arm < blind.runs_per_arm


def test_power_has_a_number_where_scipys_noncentral_t_gives_none():
    """scipy's noncentral t returns NaN far in its tails: the plan falls back on the normal approximation
    rather than skip the designs that decide (a clear effect was planned at 50 folds)."""
    from lpstudy.results.answers.decide import power

    reached = power(0.03, np.array([1e-4, 0.004]), np.array([2.0, 9.0]), 0.01, 0.05 / 7, BEYOND)
    assert np.all(np.isfinite(reached)) and reached[0] > 0.99


def test_an_arm_no_design_can_decide_gets_no_fold_count_and_a_reason():
    # spread 0.035 nats at K = 10 against a ±0.0135 ROPE: the corrected interval never fits (issue 44)
    design = design_to_decide(0.0, 0.035, n=10, k=10, margin=0.0135, alpha=0.05, n_tests=3)
    assert design.repeats is None and design.runs_per_arm is None and design.power < POWER
    far = design_to_decide(0.004, 0.02, n=5, k=5, margin=0.01, alpha=0.05)
    assert far.folds <= MAX_FOLDS and (far.repeats or 0) <= MAX_REPEATS


def _replicate(name: str, k: int, sd: float, shift: float) -> StudyData:
    rng = np.random.default_rng(4)
    rows = []
    for p in (1.0, 2.0, 4.0):
        for fold in range(k):
            loss = 2.7 + rng.normal(0, sd) + (shift if p == 4.0 else 0.0)
            rows.append({"number": len(rows), "trial_id": len(rows) + 1, "state": "COMPLETE", "value": loss,
                         "final_val_loss": loss, "p": p, "fold": float(fold), "folds": float(k), "diverged": False,
                         "max_steps": 30.0})
    spec = {"space": {"max_steps": {"type": "fixed", "value": 30}, "gain_init": {"type": "fixed", "value": "matched"}}}
    return StudyData(name=name, info=StudyInfo(name=name, kind="replicate", preset="smoke", spec=StudySpec.from_plain(spec)),
                     trials=pd.DataFrame(rows), curves=pd.DataFrame())


def test_the_undecided_sentence_names_the_runs_the_time_and_a_command_that_makes_that_study(tmp_path, capsys):
    from lpstudy.results.answers import AnswerOptions, study_answer

    answer = study_answer(_replicate("rep", 5, 0.01, 0.012), AnswerOptions(rope=0.003)).to_json()
    plan = answer["to_decide"]
    assert plan["power"] == POWER and plan["command"] and "CPU thread" in plan["time"]
    assert plan["command"] in answer["sentence"] and plan["time"] in answer["sentence"]
    undecided = [a for a in answer["arms"] if a["verdict"] == "undecided"]
    for arm in undecided:  # the table's folds to decide is the design's, within what it can run
        design = next(d for d in plan["arms"] if d["value"] == arm["value"])
        assert arm["folds_to_decide"] == design["runs_per_arm"]
        assert arm["folds_to_decide"] is None or arm["folds_to_decide"] <= MAX_REPEATS * MAX_FOLDS
    url = f"sqlite:///{tmp_path / 'next.db'}"
    code, _, err = cli(capsys, *shlex.split(plan["command"])[1:], "--storage", url)
    assert code == 0, err
    assert f"{plan['runs']} cells" in err


def test_the_design_is_computed_on_the_differences_the_verdict_tested(monkeypatch):
    """A diverged run and a FAIL run leave the verdict's table (the engine's endpoint_table): the
    design to decide reads the same differences, so its mean is the verdict row's `diff`."""
    from lpstudy.results.answers import AnswerOptions, decide, study_answer

    data = _replicate("rep", 5, 0.01, 0.012)
    trials = data.trials
    p1 = trials.index[trials["p"] == 1.0]
    trials.loc[p1[0], "diverged"] = True  # its loss stays stored: the verdict leaves it out
    trials.loc[p1[0], "value"] = trials.loc[p1[0], "final_val_loss"] = 9.0
    trials.loc[p1[1], "state"] = "FAIL"
    trials.loc[p1[1], "value"] = float("nan")
    seen: dict[float, tuple[float, int]] = {}
    design = decide.design_to_decide

    def recording(mean, sd, n, *args, **kwargs):
        seen[round(mean, 12)] = (mean, n)
        return design(mean, sd, n, *args, **kwargs)

    monkeypatch.setattr(decide, "design_to_decide", recording)
    answer = study_answer(data, AnswerOptions(rope=0.003)).to_json()
    arm = next(a for a in answer["arms"] if a["value"] == 1.0)
    assert arm["verdict"] == "undecided" and arm["failed_runs"] == 2
    assert round(arm["diff"], 12) in seen, (arm["diff"], seen)
    assert seen[round(arm["diff"], 12)][1] == arm["n_folds"] == 3


def test_every_endpoints_folds_to_decide_is_the_80_percent_design():
    """The one engine (endpoint_verdicts) gives each undecided arm of any endpoint (the final loss,
    the convergence endpoints) the runs at which its test reaches 80 % power: design_to_decide's,
    not a second rule."""
    from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts
    from lpstudy.results.answers.options import AnswerOptions

    rng = np.random.default_rng(3)
    k, margin = 5, 0.01
    table = pd.DataFrame([2.70 + rng.normal(0, 0.01, k), 2.706 + rng.normal(0, 0.01, k), 2.703 + rng.normal(0, 0.01, k)],
                         index=["ref", "a", "b"], columns=pd.Index(range(k), name="fold"))
    rows = endpoint_verdicts(table, "ref", k=k, margin=margin, options=AnswerOptions())
    undecided = [r for r in rows if r.verdict == "undecided"]
    assert len(undecided) == 2
    for row in undecided:
        d = (table.loc[row.value] - table.loc["ref"]).to_numpy()
        design = design_to_decide(float(d.mean()), float(d.std(ddof=1)), k, k, margin, 0.05, n_tests=2)
        assert row.sigma_fold == pytest.approx(float(d.std(ddof=1))) and row.sigma_seed is None
        assert (row.folds_to_decide, row.decided_by) == (design.runs_per_arm, design.test)


def _convergence_study(seeds: int = 1):
    """A replicate of p = 2 and 4 at 5 folds whose p = 4 converges about 5 % slower (its steps undecided
    within a ±10 % ROPE), its curves planted (tests/test_convergence_verdicts.py); with seeds, S runs a
    (p, fold) cell, each with its own noise."""
    import dataclasses

    from tests.test_convergence_verdicts import planted_study

    parts = [planted_study({2.0: 1.0, 4.0: 1.05}, folds=5, seed=1 + s, jitter=0.06) for s in range(seeds)]
    trials, curves = [], []
    for s, part in enumerate(parts):
        offset = 1000 * s
        trials.append(part.trials.assign(trial_id=part.trials["trial_id"] + offset,
                                         number=part.trials["number"] + offset, seed=s))
        curves.append(part.curves.assign(trial_id=part.curves["trial_id"] + offset,
                                         trial_number=part.curves["trial_number"] + offset))
    spec = {"space": {"max_steps": {"type": "fixed", "value": 2000}}}
    return dataclasses.replace(parts[0], trials=pd.concat(trials, ignore_index=True),
                               curves=pd.concat(curves, ignore_index=True),
                               info=StudyInfo(name="conv", kind="replicate", preset="smoke", spec=StudySpec.from_plain(spec)))


def test_what_would_decide_a_convergence_endpoint_gives_the_command_and_its_time(tmp_path, capsys):
    """The steps to the threshold, undecided and resolvable by the evaluations: the convergence answer
    names the design at 80 % power planned on its own test, the command that makes that study (it runs)
    and its time, in its JSON and its words, as the final loss's does; the arm's runs to decide are
    that design's."""
    from lpstudy.results.answers import AnswerOptions, study_answer

    answer = study_answer(_convergence_study(), AnswerOptions(convergence_rope="10%")).to_json()
    convergence = answer["convergence"]
    plan = convergence["to_decide"]["steps_to_threshold"]
    steps = next(a for a in convergence["arms"] if a["endpoint"] == "steps_to_threshold")
    assert steps["verdict"] == "undecided" and not steps.get("unresolved")
    assert plan["command"].startswith("lpstudy replicate ") and "--p 2,4" in plan["command"]
    assert "CPU thread" in plan["time"] and plan["runs"] == 2 * plan["arms"][0]["runs_per_arm"]
    assert steps["folds_to_decide"] == plan["arms"][0]["runs_per_arm"] and steps["decided_by"] == plan["arms"][0]["test"]
    assert f"To decide the steps to the threshold: at 80 % power" in answer["sentence"]
    assert plan["command"] in convergence["sentence"] and plan["time"] in convergence["sentence"]
    url = f"sqlite:///{tmp_path / 'next.db'}"
    code, _, err = cli(capsys, *shlex.split(plan["command"])[1:], "--storage", url)
    assert code == 0, err
    assert f"{plan['runs']} cells" in err


def test_a_convergence_design_of_a_seeded_study_keeps_its_seeds_inside_the_folds():
    """Its endpoint pairs a fold's seed-averaged runs, so the spread planned on is that of S-seed means:
    the design keeps the S seeds (--seeds S in its command) and counts them in its runs."""
    from lpstudy.results.answers import AnswerOptions, study_answer

    answer = study_answer(_convergence_study(seeds=3), AnswerOptions(convergence_rope="7%")).to_json()
    plan = answer["convergence"]["to_decide"]["steps_to_threshold"]
    assert plan["seeds"] == 3 and "--seeds 3" in plan["command"]
    assert plan["arms"][0]["runs_per_arm"] == 3 * plan["arms"][0]["folds"] * plan["arms"][0]["repeats"]
    assert plan["runs"] == 2 * plan["arms"][0]["runs_per_arm"]


def test_an_interim_convergence_reading_proposes_no_new_study():
    """Runs still to come: the convergence arm is an interim reading, and what would decide it is the
    runs it waits for, not a design of a new study."""
    import dataclasses

    from lpstudy.results.answers import AnswerOptions, study_answer

    data = _convergence_study()
    trials = data.trials
    last = trials.index[(trials["p"] == 4.0) & (trials["fold"] == 4)]
    trials.loc[last, "state"] = "WAITING"  # still to run: no curve yet
    curves = data.curves[~data.curves["trial_id"].isin(trials.loc[last, "trial_id"])]
    answer = study_answer(dataclasses.replace(data, curves=curves), AnswerOptions(convergence_rope="10%")).to_json()
    steps = next(a for a in answer["convergence"]["arms"] if a["endpoint"] == "steps_to_threshold")
    assert steps["interim"] and steps["verdict"] == "undecided"
    assert "to_decide" not in answer["convergence"] and "To decide the steps" not in answer["sentence"]


def _out_of_reach(diff: float, sigma_fold: float, sigma_seed: float) -> str:
    """The sentence of an arm no design decides, as the answer holds it (the cpu-seeds study's figures)."""
    from lpstudy.results.answers.decide import decide_sentence

    from lpstudy.results.answers.answer_types import ArmDesign, ArmVerdict, ToDecide
    from tests.answer_studies import FIXTURE

    plan = ToDecide(power=0.8, max_repeats=20, arms=[ArmDesign(value=4.0, test="beyond the ROPE", power_target=0.8,
                                                                folds=3, repeats=None, seeds=None, runs_per_arm=None,
                                                                power=0.5)],
                    folds=None, repeats=None, seeds=None, runs=None, command=None, time=None, seeds_measured=True)
    measured = ArmVerdict.of(json.loads(FIXTURE.read_text())["replicate_grid"]["arms"][0])
    arm = dataclasses.replace(measured, value=4.0, diff=diff, sigma_fold=sigma_fold, sigma_seed=sigma_seed)
    return decide_sentence(plan, 3, lambda v: f"p = {v:g}", arms=[arm], margin=0.0093)


def test_an_arm_out_of_reach_is_said_for_the_reason_its_figures_give():
    """No design decides an arm either because the partition's share bounds the interval (σ_fold large
    against σ_seed) or because its difference sits on the ROPE's edge; the sentence names the one its
    measured components give, not the partition's where σ_fold is 0 (the cpu-seeds study: −0.0098 nats
    against a margin of 0.0093, σ_fold 0, σ_seed 0.012)."""
    at_edge = _out_of_reach(-0.0098, 0.0, 0.012)
    assert "lies 0.0005 from the ROPE's edge at ±0.0093" in at_edge and "shared training text" not in at_edge
    bounded = _out_of_reach(-0.0098, 0.005, 0.012)
    assert "the folds' shared training text, σ_fold 0.0050 nats, bounds the interval" in bounded
    assert "ROPE's edge" not in bounded
