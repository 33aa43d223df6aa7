"""The convergence tables, one for every reader: `lpstudy verdict`, `lpstudy report` and the
dashboard's Convergence page show answer.convergence (lpstudy.results.answers.convergence) in
these columns and words."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.values import arm_name

CONVERGENCE_COLUMNS = ("arm", "endpoint", "verdict", "relative", "interval (relative)", "folds to decide", "folds",
                       "censored", "mean", "diff")
RESTRICTED_COLUMNS = ("arm", "runs", "reached", "censored", "restricted mean steps", "interval", "tokens",
                      "median seconds (reached)")
ENDPOINT_NAMES = {"steps_to_threshold": "steps to threshold", "auc": "area under curve"}


def _num(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def convergence_frame(answer: VerdictAnswer) -> pd.DataFrame:
    """Each arm's verdict on each convergence endpoint against the reference, as text cells."""
    rows = []
    for arm in answer.convergence.arms if answer.convergence else []:
        decimals = ".0f" if arm.unit == "steps" else ".4f"
        decide = "–"
        if arm.verdict == "undecided" and arm.unresolved:  # the evaluations cannot decide it: more folds will not
            decide = (f"eval_interval ≤ {arm.eval_interval_to_resolve}" if arm.eval_interval_to_resolve
                      else "no run reached it")
        elif arm.verdict == "undecided":
            decide = (f"{arm.folds_to_decide} ({arm.decided_by})" if arm.folds_to_decide
                      else "over 50" if arm.n_folds >= 2 else "needs 2 folds first")
        censored = ", ".join(f"{n} {reason}" for reason, n in arm.censored_by.items()) or "0"
        rows.append([arm_name(arm.field, arm.value), ENDPOINT_NAMES[arm.endpoint], arm.verdict,
                     "–" if arm.rel_diff is None else f"{100 * arm.rel_diff:+.1f} %",
                     "–" if arm.rel_low is None or arm.rel_high is None else
                     f"[{100 * arm.rel_low:+.1f} %, {100 * arm.rel_high:+.1f} %]",
                     decide, str(arm.n_folds), censored, _num(arm.mean, decimals),
                     _num(arm.diff, "+" + decimals)])
    return pd.DataFrame(rows, columns=list(CONVERGENCE_COLUMNS))


def restricted_frame(answer: VerdictAnswer) -> pd.DataFrame:
    """Per arm (the reference too): Kaplan–Meier's restricted mean steps to the threshold with its interval."""
    rows = [[arm_name(r.field, r.value), str(r.runs), str(r.reached), str(r.censored),
             _num(r.rmst, ".0f"), f"[{_num(r.low, '.0f')}, {_num(r.high, '.0f')}]",
             _num(r.rmst_tokens, ",.0f"), _num(r.median_seconds_reached, ".1f")]
            for r in (answer.convergence.restricted_mean if answer.convergence else [])]
    return pd.DataFrame(rows, columns=list(RESTRICTED_COLUMNS))


def convergence_title(answer: VerdictAnswer) -> str:
    """What the table is: the threshold and its rule, the horizon, the ROPEs and the method."""
    c = answer.convergence
    if not c:
        return ""
    steps, area = c.rope.get("steps_to_threshold"), c.rope.get("auc")
    return (f"Convergence against the reference · threshold {c.threshold:g} nats ({c.threshold_rule}) · "
            f"horizon {c.horizon:g} steps · ROPE of the steps "
            f"{steps.words if steps else '–'}, of the area "
            f"{area.words if area else '–'} · {c.method} · alpha {answer.alpha:g}")
