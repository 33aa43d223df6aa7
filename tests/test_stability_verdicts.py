"""Stability as verdicts through the engine that decides the final loss, on planted replicates whose
truth is known: the largest logit, the smallest head entropy, loss spikes and the LR sensitivity
(Wortsman et al. 2023) paired by fold with a ROPE each, divergence from its counts (Fisher, Newcombe
from Wilson) that never calls zero events in few runs equivalent; the interim rule; the sentence."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from lpstudy.results.answers import study_answer
from lpstudy.results.answers.stability_verdicts import divergence_verdicts
from lpstudy.results.reading.frames import StudyData, StudyInfo


def planted(logit: dict[float, float], entropy: dict[float, float] | None = None, folds: int = 10, seed: int = 0,
            lrs=(1e-3,), bowl: dict[float, float] | None = None, diverged: set | None = None,
            waiting: set | None = None) -> StudyData:
    """A replicate of p × lr × folds: run (p, lr, fold)'s largest logit is logit[p] · (1 + 3 % noise),
    its smallest head entropy entropy[p] + 0.02 noise, one loss spike at most, its final loss
    1.5 + bowl[p] · log10(lr / 1e-3)² + a fold shift (a wider bowl: more sensitive to the learning rate).
    diverged {(p, lr, fold)}: that run diverged; waiting {(p, fold)}: not run yet."""
    rng = np.random.default_rng(seed)
    entropy = entropy or {p: 1.0 for p in logit}
    bowl = bowl or {p: 0.1 for p in logit}
    shift = rng.normal(0, 0.01, folds)
    trials, curves, trial_id = [], [], 0
    for p in logit:
        for lr in lrs:
            for fold in range(folds):
                trial_id += 1
                blown = (p, lr, fold) in (diverged or set())
                open_ = (p, fold) in (waiting or set())
                loss = 1.5 + bowl[p] * math.log10(lr / 1e-3) ** 2 + shift[fold] + rng.normal(0, 0.003)
                trials.append({"number": trial_id - 1, "trial_id": trial_id, "state": "WAITING" if open_ else "COMPLETE",
                               "value": math.nan if open_ or blown else loss, "final_val_loss": math.nan if open_ else loss,
                               "p": p, "lr": lr, "fold": fold, "folds": folds, "diverged": blown, "max_steps": 100})
                if open_:
                    continue
                steps = np.array([0, 50, 100])
                curves.append(pd.DataFrame({
                    "trial_id": trial_id, "trial_number": trial_id - 1, "step": steps, "val_loss": [4.17, 2.5, loss],
                    "max_logit": logit[p] * (1 + rng.normal(0, 0.03)) * np.array([0.5, 0.8, 1.0]),
                    "min_head_entropy": entropy[p] + rng.normal(0, 0.02) + np.array([1.0, 0.5, 0.0]),
                    "loss_spikes": np.array([0, 0, rng.integers(0, 2)])}))
    return StudyData(name="planted", info=StudyInfo(name="planted", kind="replicate"), trials=pd.DataFrame(trials),
                     curves=pd.concat(curves, ignore_index=True))


def verdicts(answer: dict, endpoint: str) -> dict:
    return {r["p"]: r for r in answer["stability"]["verdicts"] if r["endpoint"] == endpoint}


def test_a_larger_logit_and_a_collapsing_entropy_are_worse_and_equal_ones_equivalent_each_with_its_rope():
    answer = study_answer(planted({2.0: 10.0, 3.0: 14.0, 4.0: 10.1}, {2.0: 1.0, 3.0: 0.6, 4.0: 1.0})).to_json()
    logit, entropy = verdicts(answer, "max_logit"), verdicts(answer, "min_entropy")
    assert logit[3.0]["verdict"] == "worse" and logit[3.0]["low"] > 1.0  # 4 logits above, beyond ±10 % of 10
    assert logit[4.0]["verdict"] == "equivalent"
    assert entropy[3.0]["verdict"] == "worse" and entropy[3.0]["high"] < -0.1  # 0.4 nats lower: in its units
    assert entropy[4.0]["verdict"] == "equivalent"
    stability = answer["stability"]
    assert stability["rope"]["max_logit"]["words"] == "±10 % of the reference's mean"
    assert stability["rope"]["min_entropy"]["absolute"] == 0.1
    assert stability["reference"]["max_logit"]["mean"] == pytest.approx(10.0, rel=0.05)
    said = answer["sentence"]
    assert "Stability against p = 2: largest logit (±10 % of the reference's mean): p = 3 higher" in said
    assert "smallest head entropy (±0.1 nats): p = 3 lower" in said


def test_the_lr_sweep_inside_each_arm_gives_the_lr_sensitivity_verdict():
    """p = 3's loss rises four times as fast away from the best learning rate: more sensitive (Wortsman
    et al. 2023: the mean excess over the sweep's best), with the final loss's ROPE."""
    data = planted({2.0: 10.0, 3.0: 10.0}, lrs=(1e-4, 1e-3, 1e-2), bowl={2.0: 0.02, 3.0: 0.08})
    answer = study_answer(data).to_json()
    (row,) = verdicts(answer, "lr_sensitivity").values()
    truth = (0.08 - 0.02) * 2 / 3  # the mean excess over lr ∈ {1e-4, 1e-3, 1e-2}: two of three one decade off
    assert row["verdict"] == "worse" and row["low"] <= truth <= row["high"]
    assert answer["stability"]["reference"]["lr_sensitivity"]["mean"] == pytest.approx(0.02 * 2 / 3, abs=0.005)
    assert "LR sensitivity (±0.01 nats (the final loss's)): p = 3 more sensitive" in answer["sentence"]
    # a diverged run counts at the loss at initialisation (its first evaluation), never as a gap
    blown = study_answer(planted({2.0: 10.0, 3.0: 10.0}, lrs=(1e-4, 1e-3, 1e-2), bowl={2.0: 0.02, 3.0: 0.02},
                                 diverged={(3.0, 1e-2, f) for f in range(10)})).to_json()
    (row,) = verdicts(blown, "lr_sensitivity").values()
    assert row["verdict"] == "worse" and row["mean"] > (4.17 - 1.5) / 3


def test_divergence_is_never_equivalent_from_zero_events_in_few_runs():
    def one(k: int, n: int, ref_k: int, ref_n: int):
        runs = pd.DataFrame({"arm": [3.0] * n + [2.0] * ref_n,
                             "diverged": [True] * k + [False] * (n - k) + [True] * ref_k + [False] * (ref_n - ref_k)})
        (row,) = divergence_verdicts(runs, 2.0, 0.05)
        return row

    none = one(0, 10, 0, 10)  # 0 of 10 against 0 of 10: Newcombe's 90 % interval is about ±0.21
    assert none.verdict == "undecided" and none.equivalence_high > 0.2 and none.folds_to_decide == 25
    assert one(3, 10, 0, 10).verdict == "undecided"  # Fisher's p = 0.21
    assert one(9, 10, 0, 10).verdict == "worse"
    assert one(0, 10, 9, 10).verdict == "better"
    assert one(0, 400, 0, 400).verdict == "equivalent"  # enough runs: within ±10 points
    decided = none.folds_to_decide
    assert one(0, decided, 0, decided).verdict == "equivalent" != one(0, decided - 1, 0, decided - 1).verdict


def test_stability_is_interim_while_runs_are_to_come_and_zero_variance_decides_nothing():
    answer = study_answer(planted({2.0: 10.0, 3.0: 14.0}, waiting={(3.0, 9)})).to_json()
    assert all(r["verdict"] == "undecided" and r["interim"] for r in answer["stability"]["verdicts"])
    assert "an interim reading (runs still to come)" in answer["sentence"]
    data = planted({2.0: 10.0, 3.0: 10.0})
    data.curves["loss_spikes"] = 0  # no run spiked: a difference of exactly 0 on every fold
    (spikes,) = verdicts(study_answer(data).to_json(), "loss_spikes").values()
    assert spikes["verdict"] == "undecided" and "do not vary" in spikes["unresolved"]


@pytest.mark.slow  # 20 whole answers: the bench measures the rate on thousands
def test_the_rate_of_false_verdicts_with_no_effect_stays_at_alpha():
    """Twenty planted replicates with no effect: a false better or worse on any endpoint in at most
    two of them (the bench measures it on thousands: benchmarks/results/stability_verdicts.md)."""
    wrong = 0
    for seed in range(20):
        answer = study_answer(planted({2.0: 10.0, 3.0: 10.0, 4.0: 10.0}, seed=seed)).to_json()
        wrong += any(r["verdict"] in ("better", "worse") for r in answer["stability"]["verdicts"])
    assert wrong <= 2


@pytest.mark.slow  # the command line end to end, as the convergence one
def test_lpstudy_verdict_says_and_prints_the_stability_verdicts(seeded, capsys):
    import json

    from tests.study_helpers import cli

    url, _ = seeded
    code, out, _ = cli(capsys, "verdict", "--study", "grid", "--storage", url, "--json")
    stability = json.loads(out)["stability"]
    assert code == 0 and {"max_logit", "min_entropy", "loss_spikes", "divergence"} <= set(stability["rope"])
    assert {r["endpoint"] for r in stability["verdicts"]} >= {"max_logit", "divergence"}
    assert stability["sentence"].startswith("Stability against p = 2")
    code, out, _ = cli(capsys, "verdict", "--study", "grid", "--storage", url)
    assert code == 0 and "Stability against p = 2" in out and "Stability verdicts against the reference" in out
    assert "largest logit" in out and "±10 percentage points" in out


def test_an_undecided_stability_endpoint_says_the_command_and_time_that_would_decide_it():
    data = planted({2.0: 10.0, 3.0: 10.3}, folds=4)  # 3 % higher: inside ±10 %, too few folds to say equivalent
    data = dataclasses.replace(data, info=dataclasses.replace(data.info, preset="smoke"))
    answer = study_answer(data).to_json()
    (logit,) = verdicts(answer, "max_logit").values()
    assert logit["verdict"] == "undecided" and logit["folds_to_decide"]
    (plan,) = [p for p in answer["stability"]["to_decide"] if p["endpoint"] == "max_logit"]
    assert plan["arms"] == [3.0] and plan["runs_per_arm"] == logit["folds_to_decide"] > 4
    assert plan["runs"] == plan["folds"] * plan["repeats"] * plan["seeds"] * 2  # the reference runs it too
    assert plan["command"].startswith("lpstudy replicate --study planted-") and "--p 2,3" in plan["command"]
    assert plan["time"].startswith(f"{plan['runs']} trial(s) of preset smoke: about")
    assert f"largest logit: {plan['runs_per_arm']} runs per arm ({plan['runs']} runs): `{plan['command']}`" \
        in answer["stability"]["sentence"]
    # divergence, 0 of 4 against 0 of 4: the runs per arm its exact rule needs, bought as repeats of the 4 folds
    (divergence,) = [p for p in answer["stability"]["to_decide"] if p["endpoint"] == "divergence"]
    assert divergence["runs_per_arm"] == 25 and (divergence["folds"], divergence["repeats"]) == (4, 7)
    assert "divergence: 25 runs per arm by Fisher's exact test (56 runs)" in answer["sentence"]



def test_a_study_without_a_preset_gets_the_stability_design_without_a_command_or_time():
    """A study lpstudy did not make has no preset: no replicate command can name one, nor a time be
    estimated, so its stability plan says the design alone (as the final loss's to_decide does)."""
    data = planted({2.0: 10.0, 3.0: 10.3}, folds=4)
    data = dataclasses.replace(data, info=dataclasses.replace(data.info, preset=None))
    answer = study_answer(data).to_json()
    (plan,) = [p for p in answer["stability"]["to_decide"] if p["endpoint"] == "max_logit"]
    assert plan["runs_per_arm"] > 4 and plan["command"] is None and plan["time"] is None
    assert f"largest logit: {plan['runs_per_arm']} runs per arm ({plan['runs']} runs);" in answer["stability"]["sentence"]
    assert "None" not in answer["stability"]["sentence"]


def test_divergence_plans_the_runs_its_exact_rule_decides_with_80_percent_power():
    from scipy.stats import fisher_exact

    import lpstudy.results.answers.stability_verdicts as stability

    runs = pd.DataFrame({"arm": [3.0] * 10 + [2.0] * 10, "diverged": [True] * 3 + [False] * 17})
    (row,) = divergence_verdicts(runs, 2.0, 0.05)  # 3 of 10 against 0 of 10: beyond the ROPE, not yet shown
    n = row.folds_to_decide
    assert row.verdict == "undecided" and row.decided_by == "beyond the ROPE" and 10 < n < 100
    # the smallest count at which the exact power reaches 80 %
    assert stability.divergence_power(0.3, 0.0, n, 0.05, True) >= 0.8 > stability.divergence_power(0.3, 0.0, n - 1, 0.05, True)
    rng = np.random.default_rng(0)  # the vectorised Fisher test is scipy's
    k1, k2 = rng.integers(0, 31, 40), rng.integers(0, 31, 40)
    assert stability.fisher_p(k1, k2, 30) == pytest.approx([fisher_exact([[a, 30 - a], [b, 30 - b]])[1]
                                                             for a, b in zip(k1, k2)], abs=1e-9)


@pytest.mark.slow  # 600 verdicts on simulated counts
def test_the_divergence_verdict_itself_decides_in_80_percent_of_studies_of_the_planned_runs(monkeypatch):
    import lpstudy.results.answers.stability_verdicts as stability

    n = stability.runs_to_decide(0.3, 0.0, 0.05)
    monkeypatch.setattr(stability, "runs_to_decide", lambda *args: None)  # the verdict alone, not its plan

    def worse_share(n: int, draws: int = 300) -> float:
        rng = np.random.default_rng(n)
        hits = 0
        for _ in range(draws):
            k = int(rng.binomial(n, 0.3))
            runs = pd.DataFrame({"arm": [3.0] * n + [2.0] * n, "diverged": [True] * k + [False] * (2 * n - k)})
            hits += divergence_verdicts(runs, 2.0, 0.05)[0].verdict == "worse"
        return hits / draws

    # worse in about 80 % of studies of n runs at those rates, fewer with fewer
    assert worse_share(n) >= 0.74 and worse_share(max(10, n * 2 // 3)) < 0.74
