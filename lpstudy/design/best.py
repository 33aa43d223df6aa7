"""Which trial is best on its own value, defined once: the lowest value among COMPLETE trials that
did not diverge (a diverged run COMPLETEs valued ln V so that samplers avoid it, but it is never a
configuration to retrain), ties broken by the earlier trial. The report, the dashboard's pages and
the compare table rank trials through here, on Optuna's FrozenTrials or on the trials frame
(lpstudy.results.reading.frames). Which configuration a *search* returns (what `export`, `status`, the
Export page and a comparison's worker take) is its race's answer over folds
(lpstudy.design.intensify, read by lpstudy.study.races), which uses is_candidate's rule per run; every
reader that shows a study's best (the report, the Home page, `lpstudy studies`, a comparison's
tuning table, `status`) asks lpstudy.results.reading.measured (search_chosen, shown_best) for it, which
falls back on ranked_frame here for a grid."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def is_candidate(state: str, value: Any, diverged: Any) -> bool:
    """Whether a trial can be the best: COMPLETE, a finite value, not diverged."""
    try:
        finite = value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        finite = False
    return state == "COMPLETE" and finite and not bool(diverged)


def ranked_frame(trials: pd.DataFrame, k: int | None = None) -> pd.DataFrame:
    """The candidate rows of a trials frame (lpstudy.results.reading.frames), best first, with `loss`:
    is_candidate's rule on whole columns (100,000 trials in milliseconds, not a call per row), and
    only the rows returned copied."""
    import numpy as np
    import pandas as pd

    value = pd.to_numeric(trials["value"], errors="coerce").astype("float64")
    mask = (trials["state"] == "COMPLETE") & np.isfinite(value) & ~trials["diverged"].astype(bool)
    order = pd.DataFrame({"loss": value[mask], "number": trials.loc[mask, "number"]}) \
        .sort_values(["loss", "number"], kind="stable").index
    best = trials.loc[order if k is None else order[:k]].copy()
    best["loss"] = value[best.index]
    return best
