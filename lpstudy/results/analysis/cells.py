"""A grid cell counted once. A grid study's cells are every combination of the fields its space
gives a list of choices (lpstudy.design.space: Choice): (p, fold) for the paper's protocol, (p, lr,
fold) for a learning-rate sweep, (p, lr, gain_init, fold) for a `create` grid over all four.

A database written before claims were atomic (or by a `replicate` that raced another) can hold two
COMPLETE trials of one cell. Counted as two folds, they would narrow every interval of the paired
comparison; so the readers (status, the dashboard, the report) keep the first completed trial of
each cell (the lowest trial number) and say how many copies they left out. A cell is keyed on
every gridded field: on (p, fold) alone, a sweep's learning rates after the first would be taken
for copies of the first.

A trial's cell is read from its Optuna parameters (the frame's `param_<field>` columns: what the
cell was enqueued with, `matched` for a matched gain), else from the field's own column.
"""

from __future__ import annotations

import pandas as pd

from lpstudy.design.space import Choice
from lpstudy.design.spec import StudySpec

# The cells of a replicate study whose spec has no readable space (written by an older lpstudy:
# lpstudy.results.rows.build.stored_spec reads it with an empty space).
PAPER_CELL = ("p", "fold")
# Fields that tell the replicates of one configuration apart, not configurations.
REPLICATE_FIELDS = ("fold", "seed", "repeat")


def grid_fields(spec: StudySpec | None) -> tuple[str, ...]:
    """The fields a grid study's cells are made of, in the order of its space; () for a study
    that is not a grid (a search samples, no two trials share a cell by design, and a study without
    a spec)."""
    if spec is None or (not spec.is_grid and spec.kind != "replicate"):
        return ()
    fields = tuple(param.name for param in spec.space.params if isinstance(param, Choice))
    return fields or PAPER_CELL


def setting_fields(spec: StudySpec | None) -> tuple[str, ...]:
    """The gridded fields besides p and the replicates (fold, seed, repeat): the settings a table shows p
    at, one row each (a sweep's learning rates); () for the paper's protocol."""
    return tuple(f for f in grid_fields(spec) if f != "p" and f not in REPLICATE_FIELDS)


def cell_values(trials: pd.DataFrame, name: str) -> pd.Series:
    """The value of field `name` that puts each trial in its cell: its Optuna parameter, else its
    column (NaN where it has neither)."""
    param = f"param_{name}"
    own = trials[name] if name in trials.columns else pd.Series(float("nan"), index=trials.index, dtype="object")
    if param not in trials.columns:
        return own.rename(name)
    return trials[param].where(trials[param].notna(), own).rename(name)


def cell_frame(trials: pd.DataFrame, fields: tuple[str, ...]) -> pd.DataFrame:
    """One column per gridded field: each trial's cell."""
    return pd.DataFrame({name: cell_values(trials, name) for name in fields}, index=trials.index)


def cells_done(trials: pd.DataFrame, fields: tuple[str, ...]) -> int:
    """The number of distinct cells with a COMPLETE trial."""
    done = trials[trials["state"] == "COMPLETE"]
    if done.empty:
        return 0
    return len(cell_frame(done, fields or PAPER_CELL).drop_duplicates())


def duplicate_cells(trials: pd.DataFrame, fields: tuple[str, ...] = PAPER_CELL) -> list[int]:
    """Numbers of the COMPLETE trials that repeat a cell already completed by a lower-numbered trial."""
    if trials.empty or not fields:
        return []
    done = trials[trials["state"] == "COMPLETE"].sort_values("number")
    repeated = cell_frame(done, fields).duplicated(keep="first")
    return [int(n) for n in done.loc[repeated, "number"]]


def one_per_cell(trials: pd.DataFrame, curves: pd.DataFrame | None, fields: tuple[str, ...]
                 ) -> tuple[pd.DataFrame, pd.DataFrame | None, list[int]]:
    """(trials, curves) without the duplicate cells' trials, and those trials' numbers."""
    numbers = duplicate_cells(trials, fields)
    if not numbers:
        return trials, curves, []
    dropped = trials["number"].isin(numbers)
    ids = set(trials.loc[dropped, "trial_id"])
    kept = trials[~dropped].reset_index(drop=True)
    if curves is not None and len(curves):
        curves = curves[~curves["trial_id"].isin(ids)].reset_index(drop=True)
    return kept, curves, numbers


def duplicates_note(numbers: list[int], fields: tuple[str, ...] = PAPER_CELL) -> str:
    """One line for a reader: what was left out."""
    shown = ", ".join(str(n) for n in numbers[:10]) + (", …" if len(numbers) > 10 else "")
    return (f"{len(numbers)} duplicate run(s) of a grid cell left out (trial {shown}): each "
            f"({', '.join(fields)}) cell counts once, its first completed trial")
