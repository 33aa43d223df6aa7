"""The verdict table, one for every reader: `lpstudy verdict`, `lpstudy status`, `lpstudy compare`,
`lpstudy report` and the dashboard's Effect of p and Compare pages show these columns of
lpstudy.results.answers' arms, in these words; and the one colour rule of an arm (VERDICT_COLOURS, the
reference in NEUTRAL_COLOUR) that every chart comparing arms draws with a legend. No other table or
chart compares arms: one statistic, one source."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.answers.answer_types import StageArm, VerdictAnswer, Verdicts
from lpstudy.values import arm_name

# "p-value (...)", never a bare "p": p is the norm's exponent in the arm's name beside it
VERDICT_COLUMNS = ("arm", "verdict", "diff", "interval (nats)", "relative", "interval (relative)",
                   "p-value (difference)", "p-value (equivalence)", "runs to decide", "folds", "mean loss")
VERDICT_COLOURS = {"better": "#2a9d4b", "equivalent": "#3b6fb6", "worse": "#c8412c", "undecided": "#9a9a9a"}
NEUTRAL_COLOUR = "#444444"  # the reference: it has no verdict of its own
COLOUR_RULE = "Colour: the verdict (green better, blue equivalent, red worse, grey undecided; the reference dark)"


def _num(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def verdict_frame(answer: Verdicts) -> pd.DataFrame:
    """The table as text cells (the reference first), one row per arm."""
    ref = answer.reference
    if not ref:
        return pd.DataFrame(columns=list(VERDICT_COLUMNS))
    rows = [[arm_name(ref.field, ref.value), "reference", "–", "–", "–", "–", "–", "–", "–",
             str(ref.n_folds), _num(ref.mean, ".4f")]]
    for arm in answer.arms:
        decide = "–"
        if arm.verdict == "undecided":
            # the runs per arm at 80 % power within what the design can run (answers.decide), else none
            decide = (f"{arm.folds_to_decide} ({arm.decided_by})" if arm.folds_to_decide
                      else arm.unresolved if arm.unresolved
                      else "none within the design" if arm.n_folds >= 2 else "needs 2 folds first")
        rel = arm.rel_diff
        interval = ("–" if arm.rel_low is None or arm.rel_high is None else
                    f"[{100 * arm.rel_low:+.2f} %, {100 * arm.rel_high:+.2f} %]")
        nats = "–" if arm.low is None else f"[{arm.low:+.4f}, {arm.high:+.4f}]" + _level(arm, answer.alpha)
        rows.append([arm_name(arm.field, arm.value), arm.verdict, _num(arm.diff, "+.4f"), nats,
                     "–" if rel is None else f"{100 * rel:+.2f} %", interval,
                     _num(arm.p_value_difference, ".3g"), _num(arm.p_value_equivalence, ".3g"), decide,
                     str(arm.n_folds), _num(arm.mean, ".4f")])
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def _level(arm, alpha: float) -> str:
    """The interval's level where it is not 1 − alpha: the level its verdict was decided at (Holm's
    step for better or worse, TOST's 1 − 2·alpha step for equivalent), so the interval and the verdict
    never disagree."""
    level = arm.confidence
    if level is None or abs(level - (1 - alpha)) < 1e-9:
        return ""
    return f" ({100 * level:.1f} %)"


def verdict_title(answer: Verdicts) -> str:
    """What the table is, with the ROPE and the method stated."""
    return (f"Verdicts against the reference · ROPE {answer.rope.words} · "
            f"{answer.method} · alpha {answer.alpha:g} · intervals {100 * (1 - answer.alpha):.0f} % unless "
            f"a level is shown (the one the verdict was decided at: Holm's step, TOST's 90 %), "
            f"corrected for the {answer.k}-fold CV")


def sequential_lines(answer: VerdictAnswer) -> list[str]:
    """The rounds of a sequential (--until-decided) study in words; [] for any other."""
    seq, ref = answer.sequential, answer.reference
    if not seq:
        return []
    states = ", ".join(f"{arm_name(ref.field, a.value)}: {a.state} ({a.folds} folds)"
                       for a in seq.arms) if ref else ""
    saved = (f"{seq.folds_saved} of {seq.cells_max} fold runs saved against --max-folds {seq.max_folds}"
             if seq.folds_saved is not None else
             f"{seq.cells_run} of at most {seq.cells_max} fold runs so far")
    return [f"stages of {'/'.join(map(str, seq.rounds))} folds · {seq.looks_done} of {len(seq.rounds)} over · "
            f"{saved}", *([f"arms: {states}"] if states else [])]


def stage_state(arm: StageArm) -> str:
    """An arm's state at a look, in words: its verdict there, or "stopped (equivalent)" when an
    earlier look decided it."""
    return f"stopped ({arm.decided})" if arm.state == "stopped" else arm.state


def stages_frame(answer: VerdictAnswer) -> pd.DataFrame:
    """The stages of a sequential (--until-decided) study, one row per look: the folds run by then,
    the alpha that look spends and the alpha spent up to it, then per arm its state at that look
    (stage_state); at a look not reached yet, an arm already decided is "stopped (its verdict)" and
    the others "running" (the look under way) or "to come". Columns named as lpstudy.results.tables.columns
    labels them; empty for any other study."""
    seq, ref = answer.sequential, answer.reference
    if not seq or not ref:
        return pd.DataFrame()
    names = [arm_name(ref.field, a.value) for a in seq.arms]
    decided = {arm_name(ref.field, a.value): a.state for a in seq.arms if a.state in VERDICT_COLOURS
               and a.state != "undecided"}
    rows = []
    for look in seq.looks:
        if look.over:
            states = {arm_name(ref.field, a.value): stage_state(a) for a in look.arms}
        else:
            waiting = "running" if look.look == seq.looks_done + 1 else "to come"
            states = {name: f"stopped ({decided[name]})" if name in decided else waiting for name in names}
        rows.append({"look": look.look, "folds_run": look.folds, "alpha_look": look.level,
                     "alpha_spent": look.spent, **{name: states.get(name) for name in names}})
    return pd.DataFrame(rows)
