"""A grid cell counted once: a replicate study's cells are (p, fold) pairs, each meant to run once.

A database written before claims were atomic (or by a `replicate` that raced another) can hold two
COMPLETE trials of one cell. Counted as two folds, they would narrow every interval of the paired
comparison; so the readers (status, the dashboard, the report) keep the first completed trial of
each cell (the lowest trial number) and say how many copies they left out.
"""

from __future__ import annotations

import pandas as pd

CELL_KEYS = ("p", "fold")


def duplicate_cells(trials: pd.DataFrame) -> list[int]:
    """Numbers of the COMPLETE trials that repeat a cell already completed by a lower-numbered trial."""
    if trials.empty or any(k not in trials.columns for k in CELL_KEYS):
        return []
    done = trials[trials["state"] == "COMPLETE"].sort_values("number")
    repeated = done.duplicated(list(CELL_KEYS), keep="first")
    return [int(n) for n in done.loc[repeated, "number"]]


def one_per_cell(trials: pd.DataFrame, curves: pd.DataFrame | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame | None, list[int]]:
    """(trials, curves) without the duplicate cells' trials, and those trials' numbers."""
    numbers = duplicate_cells(trials)
    if not numbers:
        return trials, curves, []
    dropped = trials["number"].isin(numbers)
    ids = set(trials.loc[dropped, "trial_id"])
    kept = trials[~dropped].reset_index(drop=True)
    if curves is not None and len(curves):
        curves = curves[~curves["trial_id"].isin(ids)].reset_index(drop=True)
    return kept, curves, numbers


def duplicates_note(numbers: list[int]) -> str:
    """One line for a reader: what was left out."""
    shown = ", ".join(str(n) for n in numbers[:10]) + (", …" if len(numbers) > 10 else "")
    return (f"{len(numbers)} duplicate run(s) of a grid cell left out (trial {shown}): each (p, fold) "
            "cell counts once, its first completed trial")
