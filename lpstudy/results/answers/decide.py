"""What would decide an undecided arm, at a stated power, within what a study's design can run, and what
it costs: the runs, the command that buys them and its time.

An arm's decision comes from the corrected resampled t over its fold differences (fold_tests), with
the standard error of the mean of R·K differences of R repeats of a K-fold CV (the corrected repeated
k-fold test, Bouckaert and Frank, "Evaluating the replicability of significance tests for comparing
learning algorithms", PAKDD 2004):

    se² = s² · (1/(R·K) + 1/(K − 1))

s the spread of one run's difference, as the folds so far show it. More runs of the same K folds shrink
the first term only: the second, the price of the folds sharing their training text, stays, so some arms
cannot be decided at this K by any number of repeats, and the answer says so rather than print a fold
count the design cannot run. The power of each design is the noncentral t's (the difference test:
two-sided at Holm's strictest level alpha/m; equivalence: the two one-sided tests against ±ROPE,
Schuirmann 1987, at power P(both reject) ≈ P(upper) + P(lower) − 1), with the true difference taken to
be the one measured so far: a planning figure, as every sample-size calculation's, not a promise. The
designs tried are the study's K folds run R = 1 .. MAX_REPEATS times (replicate/compare --repeats), then
a new study of K' = K + 1 .. MAX_FOLDS folds run once (the spread taken to stay as it is, though each
fold's training text grows); the first reaching POWER is the answer, with its runs and its time
(lpstudy.training.costs).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lpstudy.results.answers.fold_tests import share_ratio

POWER = 0.80
MAX_REPEATS = 20  # the most repeats a suggestion asks for (the option allows more; the cost says why not)
MAX_FOLDS = 50  # where repeats cannot, a new study with more folds (each fold's training text grows) up to this


def standard_error(sd: float, runs: int, k: int) -> float:
    """The corrected standard error of a mean of `runs` fold differences of spread sd, K folds."""
    return sd * math.sqrt(1.0 / runs + share_ratio(k))


def power(mean: float, sd: float, runs: int, k: int, margin: float, level: float, test: str) -> float:
    """The chance that the test decides at `level` after `runs` differences, if the true difference is
    `mean` and one run's spread `sd` (noncentral t, runs − 1 degrees of freedom)."""
    from scipy.stats import nct, t

    se, df = standard_error(sd, runs, k), runs - 1
    if df < 1 or not se > 0:
        return 0.0
    if test == "difference":
        crit, shift = t.ppf(1 - level / 2, df), abs(mean) / se
        return float(nct.sf(crit, df, shift) + nct.cdf(-crit, df, shift))
    crit = t.ppf(1 - level, df)
    upper, lower = (margin - mean) / se, (margin + mean) / se
    return max(0.0, float(nct.sf(crit, df, upper) + nct.sf(crit, df, lower) - 1.0))


def design_to_decide(mean: float, sd: float, n: int, k: int, margin: float, alpha: float,
                     n_tests: int = 1) -> dict[str, Any]:
    """The fewest repeats R of the K folds (R·K runs per arm, more than the n run) at which the test
    that can decide the arm (equivalence where |mean| < margin, else difference) reaches POWER; or
    {"repeats": None, ...} with the power the most repeats would give."""
    test = "equivalence" if abs(mean) < margin else "difference"
    level = alpha / max(1, n_tests)
    out = {"test": test, "power_target": POWER, "folds": k, "repeats": None, "runs_per_arm": None, "power": None}
    if not (math.isfinite(mean) and math.isfinite(sd)) or sd <= 0 or k < 2:
        return out
    for repeats in range(1, MAX_REPEATS + 1):
        runs = repeats * k
        if runs <= n:
            continue
        reached = power(mean, sd, runs, k, margin, level, test)
        if reached >= POWER:
            return {**out, "repeats": repeats, "runs_per_arm": runs, "power": reached}
    for folds in range(k + 1, MAX_FOLDS + 1):  # a new study of more folds, run once (the spread taken to stay)
        reached = power(mean, sd, folds, folds, margin, level, test)
        if reached >= POWER:
            return {**out, "folds": folds, "repeats": 1, "runs_per_arm": folds, "power": reached}
    return {**out, "power": power(mean, sd, MAX_REPEATS * k, k, margin, level, test)}


def _command(data, arms: list, repeats: int, k: int) -> str | None:
    """The replicate that runs those repeats (a new study: the repeats are part of a study's spec)."""
    from lpstudy.names import shell_quoted
    from lpstudy.values import format_p

    if data.info.kind != "replicate":
        return None
    from lpstudy.study.space import SearchSpace

    try:
        fixed = SearchSpace.from_plain((data.info.spec or {}).get("space") or {}).fixed
    except Exception:  # a space this version cannot read
        fixed = {}
    sets = "".join(f" --set {name}={value}" for name, value in fixed.items() if name not in ("folds", "fold", "p", "repeat"))
    ps = ",".join(format_p(float(p)) for p in arms)
    name = f"{data.name}-r{repeats}" if repeats > 1 else f"{data.name}-k{k}"
    return (f"lpstudy replicate --study {shell_quoted(name)} --preset {data.info.preset} --p {ps} --folds {k}"
            + (f" --repeats {repeats}" if repeats > 1 else "") + sets)


def to_decide(answer: dict, data, diffs: dict, alpha: float) -> dict[str, Any] | None:
    """answer["to_decide"]: for each undecided arm with 2 paired folds, the design that would decide it
    (design_to_decide) and, over them all, the study that runs it: its command (a replicate), its runs
    and their time on one CPU thread and one GPU. diffs: {arm value: its fold differences}."""
    from lpstudy.training.costs import serial_estimate

    undecided = [a for a in answer.get("arms", []) if a.get("verdict") == "undecided" and a.get("n_folds", 0) >= 2]
    if not undecided or not answer.get("rope", {}).get("absolute"):
        return None
    k, margin = int(answer["k"]), float(answer["rope"]["absolute"])
    arms = []
    for arm in undecided:
        d = np.asarray(diffs.get(arm["value"], []), dtype="float64")
        d = d[np.isfinite(d)]
        if len(d) < 2:
            continue
        design = design_to_decide(float(d.mean()), float(d.std(ddof=1)), len(d), k, margin, alpha, len(undecided))
        arms.append({"value": arm["value"], **design})
    if not arms:
        return None
    reachable = [a["repeats"] for a in arms if a["repeats"]]
    out: dict[str, Any] = {"power": POWER, "max_repeats": MAX_REPEATS, "arms": arms, "folds": None, "repeats": None,
                           "runs": None, "command": None, "time": None}
    if reachable:
        # the design that decides them all: the most folds, then the most repeats, any arm needs
        k, repeats = max((a["folds"], a["repeats"]) for a in arms if a["repeats"])
        n_arms = len(answer["arms"]) + 1  # the reference runs them too
        runs = repeats * k * n_arms
        max_steps = data.trials["max_steps"].dropna().max() if "max_steps" in data.trials else None
        steps = int(max_steps) if max_steps is not None and math.isfinite(max_steps) else None
        out.update(folds=k, repeats=repeats, runs=runs, time=serial_estimate(runs, data.info.preset, steps),
                   command=_command(data, [answer["reference"]["value"], *(a["value"] for a in answer["arms"])],
                                    repeats, k))
    return out


def decide_sentence(answer: dict, name) -> str:
    """The clause the verdict's sentence ends with: what would decide the undecided arms, in runs and time."""
    plan = answer.get("to_decide")
    if not plan:
        return ""
    lost = [name(a["value"]) for a in plan["arms"] if not a["repeats"]]
    parts = []
    if plan["repeats"]:
        how = f"`{plan['command']}`" if plan["command"] else f"--repeats {plan['repeats']}"
        design = (f"{plan['repeats']} repeat(s) of the {plan['folds']} folds" if plan["folds"] == answer["k"]
                  else f"a study of {plan['folds']} folds")
        parts.append(f"at {100 * plan['power']:.0f} % power, {design} would decide " + ", ".join(name(a["value"]) for a in plan["arms"] if a["repeats"])
                     + f": {how}, {plan['time']}")
    if lost:
        parts.append(f"{', '.join(lost)}: no design up to {plan['max_repeats']} repeats of the {answer['k']} folds "
                     f"or {MAX_FOLDS} folds reaches {100 * plan['power']:.0f} % power at the current difference and "
                     "spread (the folds' shared training text bounds the interval)")
    return " To decide: " + "; ".join(parts) + "."
