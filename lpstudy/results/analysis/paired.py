"""The loss of each (arm, fold) cell, the table the verdicts (lpstudy.results.answers) pair arms on. The
arms are compared there and only there: no plain paired t table is drawn anywhere else."""

from __future__ import annotations

import pandas as pd

from lpstudy.results.analysis.selection import finished


def fold_losses(trials: pd.DataFrame, by: str, pair_on: str = "fold") -> pd.Series:
    """One loss per (group, fold) of the COMPLETE trials: the mean of the cell's runs, NaN when any
    of them diverged; indexed by (by, pair_on), the groups in the order they first appear."""
    done = finished(trials)
    done = done[done[by].notna() & done[pair_on].notna()]
    cells = done.groupby([by, pair_on], sort=False).agg(loss=("loss", "mean"), diverged=("diverged", "any"))
    return cells["loss"].where(~cells["diverged"].astype(bool))
