"""The convergence tables, one for every reader: `lpstudy verdict`, `lpstudy report` and the
dashboard's Convergence page show answer["convergence"] (lpstudy.results.answers.convergence) in
these columns and words."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.tables.verdicts import arm_name

CONVERGENCE_COLUMNS = ("arm", "endpoint", "verdict", "relative", "interval (relative)", "folds to decide", "folds",
                       "censored", "mean", "diff")
RESTRICTED_COLUMNS = ("arm", "runs", "reached", "censored", "restricted mean steps", "interval", "tokens",
                      "median seconds (reached)")
ENDPOINT_NAMES = {"steps_to_threshold": "steps to threshold", "auc": "area under curve"}


def _num(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def convergence_frame(answer: dict) -> pd.DataFrame:
    """Each arm's verdict on each convergence endpoint against the reference, as text cells."""
    convergence = answer.get("convergence") or {}
    rows = []
    for arm in convergence.get("arms", []):
        decimals = ".0f" if arm["unit"] == "steps" else ".4f"
        decide = "–"
        if arm["verdict"] == "undecided":
            decide = (f"{arm['folds_to_decide']} ({arm['decided_by']})" if arm.get("folds_to_decide")
                      else "over 50" if arm["n_folds"] >= 2 else "needs 2 folds first")
        censored = ", ".join(f"{n} {reason}" for reason, n in arm["censored_by"].items()) or "0"
        rows.append([arm_name(arm["field"], arm["value"]), ENDPOINT_NAMES[arm["endpoint"]], arm["verdict"],
                     "–" if arm.get("rel_diff") is None else f"{100 * arm['rel_diff']:+.1f} %",
                     "–" if arm.get("rel_low") is None else f"[{100 * arm['rel_low']:+.1f} %, {100 * arm['rel_high']:+.1f} %]",
                     decide, str(arm["n_folds"]), censored, _num(arm["mean"], decimals),
                     _num(arm["diff"], "+" + decimals)])
    return pd.DataFrame(rows, columns=list(CONVERGENCE_COLUMNS))


def restricted_frame(answer: dict) -> pd.DataFrame:
    """Per arm (the reference too): Kaplan–Meier's restricted mean steps to the threshold with its interval."""
    convergence = answer.get("convergence") or {}
    rows = [[arm_name(r["field"], r["value"]), str(r["runs"]), str(r["reached"]), str(r["censored"]),
             _num(r["rmst"], ".0f"), f"[{_num(r['low'], '.0f')}, {_num(r['high'], '.0f')}]",
             _num(r.get("rmst_tokens"), ",.0f"), _num(r.get("median_seconds_reached"), ".1f")]
            for r in convergence.get("restricted_mean", [])]
    return pd.DataFrame(rows, columns=list(RESTRICTED_COLUMNS))


def convergence_title(answer: dict) -> str:
    """What the table is: the threshold and its rule, the horizon, the ROPEs and the method."""
    c = answer.get("convergence") or {}
    if not c:
        return ""
    return (f"Convergence against the reference · threshold {c['threshold']:g} nats ({c['threshold_rule']}) · "
            f"horizon {c['horizon']:g} steps · ROPE of the steps "
            f"{(c['rope'].get('steps_to_threshold') or {}).get('words', '–')}, of the area "
            f"{(c['rope'].get('auc') or {}).get('words', '–')} · {c['method']} · alpha {answer['alpha']:g}")
