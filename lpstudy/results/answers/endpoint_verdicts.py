"""One engine for every verdict: any per-run endpoint (the final loss, a convergence endpoint, ...)
turned into a verdict per arm against a reference arm, on the runs both made.

`endpoint_verdicts(table, reference, k=, margin=, options=, failed=)` takes an arms × run-positions
table (a column per fold, or per (repeat, fold) when the study repeats its cross-validation; lower
is better; NaN where the run has not happened) and returns one row per arm other than the reference,
with the keys lpstudy.results.answers documents for answer["arms"]. Every reader of a comparison
goes through it, so the fold-correlation treatment, the ROPE, the multiplicity and the words are the
same for every endpoint (fold_tests holds the tests themselves).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from lpstudy.results.answers.fold_tests import VERDICTS, fold_verdicts, folds_to_decide, interval
from lpstudy.results.answers.options import AnswerOptions


def differences(table: pd.DataFrame, reference, failed: pd.DataFrame | None = None) -> tuple[list, np.ndarray]:
    """(the arms other than the reference, in the table's order; their differences from the
    reference, shape (arms, run positions), NaN where either run is missing or failed)."""
    usable = table.where(~failed.reindex_like(table).fillna(False).astype(bool)) if failed is not None else table
    ref = usable.loc[reference]
    others = [a for a in table.index if a != reference]
    if not others:
        return [], np.zeros((0, table.shape[1]))
    return others, np.stack([(usable.loc[a] - ref).to_numpy(dtype="float64") for a in others])


def endpoint_verdicts(table: pd.DataFrame, reference, *, k: int, margin: float,
                      options: AnswerOptions = AnswerOptions(), failed: pd.DataFrame | None = None,
                      tests: dict | None = None) -> list[dict]:
    """The verdict rows of every arm but the reference (each with `arm`: its index in the table).
    `tests`: the arrays a sequential design computed on the same differences (sequential.py);
    by default the fixed design's fold_verdicts."""
    others, diffs = differences(table, reference, failed)
    if not others:
        return []
    if tests is None:
        tests = fold_verdicts(diffs, k, margin, options.alpha)
    usable = table.where(~failed.reindex_like(table).fillna(False).astype(bool)) if failed is not None else table
    ref_mean = float(usable.loc[reference].mean())  # the relative columns are against the reference's mean
    verdicts = [VERDICTS[int(v)] for v in tests["verdict"]]
    n_undecided = sum(v == "undecided" for v in verdicts)
    rows = []
    for i, arm in enumerate(others):
        paired = ~np.isnan(diffs[i])
        pairs = diffs[i][paired]
        mean, se, df = float(tests["mean"][i]), float(tests["se"][i]), float(tests["df"][i])
        low, high = (float(x) for x in interval(mean, se, df, 1 - options.alpha))
        rel = (lambda x: x / ref_mean) if ref_mean else (lambda x: math.nan)
        row: dict[str, Any] = {
            "arm": arm, "n_folds": int(paired.sum()),
            "mean": float(usable.loc[arm][paired].mean()) if paired.any() else math.nan,
            "diff": mean, "rel_diff": rel(mean), "low": low, "high": high, "rel_low": rel(low), "rel_high": rel(high),
            "p_value_difference": float(tests["p_difference"][i]), "p_value_equivalence": float(tests["p_equivalence"][i]),
            "verdict": verdicts[i], "folds_to_decide": None, "decided_by": None}
        if verdicts[i] == "undecided" and len(pairs) >= 2:
            row["folds_to_decide"], row["decided_by"] = folds_to_decide(
                mean, float(np.std(pairs, ddof=1)), len(pairs), k, margin, options.alpha, n_tests=n_undecided)
        rows.append(row)
    return rows
