"""The paragraph a newcomer reads above a verdict table (the dashboard's Effect of p, Compare and
Convergence pages, `lpstudy report`, `lpstudy verdict`): what was compared, what is known, what would
decide the rest and what that costs, in plain words. Words only: every verdict, margin, run count and
cost in it is a field of the answer (lpstudy.results.answers), none is computed here."""

from __future__ import annotations

from collections.abc import Sequence

from lpstudy.results.answers.answer_types import ArmVerdict, ConvergenceArm, VerdictAnswer, Verdicts
from lpstudy.values import arm_name

# what each verdict tells a newcomer, of arms against the reference ({what}: the endpoint's words;
# {has}/{is}: the verb, singular or plural)
KNOWN = {
    "better": "{has} a lower {what} than {ref}, by more than the margin that counts",
    "worse": "{has} a higher {what} than {ref}, by more than the margin that counts",
    "equivalent": "{has} the same {what} as {ref}, within the margin that counts",
    "undecided": "{is} not yet told apart from {ref}",
}


def listed(names: list[str]) -> str:
    """'p = 1', 'p = 1 and p = 3', 'p = 1, p = 3 and p = 4'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _known(arms: Sequence[ArmVerdict | ConvergenceArm], ref: str, what: str) -> list[str]:
    """One clause per verdict that some arm has, in the order better, equivalent, worse, undecided."""
    clauses = []
    for verdict in ("better", "equivalent", "worse", "undecided"):
        names = [arm_name(a.field, a.value) for a in arms if a.verdict == verdict]
        if names:
            one = len(names) == 1
            clauses.append(f"{listed(names)} " + KNOWN[verdict].format(
                has="has" if one else "have", **{"is": "is" if one else "are"}, what=what, ref=ref))
    return clauses


def _design(answer: Verdicts) -> str:
    """The runs behind each arm: '4 folds', '5 folds, repeated 2 times, 3 seeds a fold'."""
    parts = [f"{answer.k} folds"]
    if answer.repeats > 1:
        parts.append(f"repeated {answer.repeats} times over new partitions")
    if answer.seeds and answer.seeds > 1:
        parts.append(f"{answer.seeds} training seeds a fold")
    return ", ".join(parts)


def verdict_summary(answer: Verdicts) -> str:
    """The final loss's verdicts in one paragraph; '' where there is no table under it (no reference
    or no other arm yet)."""
    ref = answer.reference
    if not ref or not answer.arms:
        return ""
    reference = arm_name(ref.field, ref.value)
    others = listed([arm_name(a.field, a.value) for a in answer.arms])
    tuned = (", each arm's best configuration after its own tuning" if answer.kind == "compare" else "")
    what = "final validation loss"
    text = [f"In plain words: this compares the {what} of {others} with {reference} (the reference){tuned}, "
            f"each run on the same {_design(answer)}, so that a difference is measured fold by fold. "
            f"A difference smaller than {answer.rope.words} counts as none (the margin, or ROPE)."]
    if answer.interim:
        text.append("Runs are still to come: no arm gets a verdict before every fold has run, so all are "
                    "undecided for now.")
    else:
        text.append("Known: " + "; ".join(_known(answer.arms, reference, what)) + ".")
    undecided = [a for a in answer.arms if a.verdict == "undecided"]
    plan = answer.to_decide
    if not undecided:
        text.append("Every arm is decided: nothing more needs to run.")
    else:
        # the arms whose design is within the bounds (a comparison's plan has no command: its design is in words)
        planned = [d.value for d in plan.arms if d.runs_per_arm] if plan and plan.runs else []
        if plan and planned:
            runs = (f"{plan.runs} runs" if plan.runs else "runs") + (f" ({plan.folds} folds an arm)" if plan.folds else "")
            text.append(f"What would decide {listed([arm_name(ref.field, v) for v in planned])}: {runs}, "
                        f"{plan.time}; the {'command' if plan.command else 'design'} is in the verdict above.")
        flat = [arm_name(a.field, a.value) for a in undecided if a.unresolved]
        if flat:
            text.append(f"{listed(flat)} differ{'s' if len(flat) == 1 else ''} from {reference} by the same amount on "
                        "every fold: with no spread there is no interval to decide from, and more runs like these "
                        "would not give one.")
        early = [arm_name(a.field, a.value) for a in undecided if a.value not in planned and a.n_folds < 2]
        if early:
            text.append(f"{listed(early)} {'needs' if len(early) == 1 else 'need'} a second fold before the "
                        "noise between folds can be measured.")
        beyond = [arm_name(a.field, a.value) for a in undecided
                  if a.value not in planned and a.n_folds >= 2 and not a.unresolved]
        if beyond and not answer.interim:  # runs still to come: the design has not had its say
            text.append(f"No design within the limits would decide {listed(beyond)}: the difference, if any, is "
                        "too small against the spread between folds.")
    return " ".join(text)


CONVERGENCE_WHAT = {"steps_to_threshold": "steps to reach the threshold", "auc": "area under the validation curve"}


def convergence_summary(answer: VerdictAnswer) -> str:
    """The convergence verdicts (steps to the threshold, area under the curve) in one paragraph; ''
    where there are none."""
    c, ref = answer.convergence, answer.reference
    if not c or not c.arms or not ref:
        return ""
    reference = arm_name(ref.field, ref.value)
    others = listed(list(dict.fromkeys(arm_name(a.field, a.value) for a in c.arms)))
    text = [f"In plain words: this compares how fast {others} learn with {reference} (the reference): the steps "
            f"each run takes to reach validation loss {c.threshold:g} within {c.horizon:g} steps (a run that never "
            "gets there counts at the horizon), and the area under its validation curve (lower: it learned "
            "sooner), fold by fold."]
    for endpoint, what in CONVERGENCE_WHAT.items():
        arms = [a for a in c.arms if a.endpoint == endpoint]
        if arms:
            text.append(f"{what[0].upper()}{what[1:]}: " + "; ".join(_known(arms, reference, what)) + ".")
    undecided = [a for a in c.arms if a.verdict == "undecided"]
    if not undecided:
        text.append("Every arm is decided on both.")
    elif any(a.unresolved for a in undecided):
        text.append("Where the evaluations are too far apart to resolve the margin, more folds will not decide it; a "
                    "shorter eval_interval would (the table's “folds to decide”).")
    else:
        text.append("More folds would decide the rest: the table's “folds to decide” gives how many per arm.")
    return " ".join(text)
