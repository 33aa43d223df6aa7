"""The stability verdicts as a table a person reads (`lpstudy verdict`, and the pages that draw
them): one row per arm and endpoint of answer.stability.verdicts, in the endpoint's own units, with
its ROPE; the colour of a row is the one rule of tables.verdicts (VERDICT_COLOURS)."""

from __future__ import annotations

import math

import pandas as pd

from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.results.answers.stability_verdicts import NAMES
from lpstudy.results.tables.verdicts import VERDICT_COLOURS, arm_name

STABILITY_COLUMNS = ("arm", "endpoint", "verdict", "diff", "interval", "ROPE", "runs to decide", "runs paired",
                     "mean")


def _num(value, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def stability_frame(answer: VerdictAnswer) -> pd.DataFrame:
    """Each arm's verdict on each stability endpoint against the reference, as text cells
    (divergence: rates in per cent, the counts beside them)."""
    rows = []
    for row in answer.stability.verdicts or []:  # none before any arm has a finished run
        rope = (answer.stability.rope or {}).get(row.endpoint)
        share = row.endpoint == "divergence"
        spec = "+.1%" if share else "+.3g"
        decide = "–"
        if row.verdict == "undecided":
            decide = (row.unresolved or "") if row.unresolved else (
                f"{row.folds_to_decide}" if row.folds_to_decide else "interim" if row.interim else "–")
        mean = (f"{row.diverged} of {row.runs} ({row.mean:.0%})" if share and row.diverged is not None
                else _num(row.mean, ".4g"))
        rows.append([arm_name(row.field, row.value), NAMES.get(row.endpoint, row.endpoint), row.verdict,
                     _num(row.diff, spec), f"[{_num(row.low, spec)}, {_num(row.high, spec)}]",
                     rope.words if rope else "–", decide, str(row.n_folds), mean])
    return pd.DataFrame(rows, columns=list(STABILITY_COLUMNS))


def stability_colours(answer: VerdictAnswer) -> list[str]:
    """The colour of each row of stability_frame: its verdict's, by the one rule."""
    return [VERDICT_COLOURS[row.verdict] for row in answer.stability.verdicts or []]


def stability_title(answer: VerdictAnswer) -> str:
    return (f"Stability verdicts against the reference · each endpoint its own family (Holm across the arms) · "
            f"alpha {answer.alpha:g} · paired by fold, corrected for the {answer.k}-fold CV; divergence: Fisher's "
            "exact test and Newcombe's interval of the difference of rates")
