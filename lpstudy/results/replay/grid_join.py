"""Grid studies joined into the one grid they make together: a grid run in parts, e.g. a learning
rate added after the first runs (an Optuna study keeps a categorical parameter's choices for all
of its trials, so a grid study cannot take another value once it has run: the new value is a grid
study of its own), or folds run on another cluster.

The parts must share every fixed setting (preset, model, steps, K folds, ...); a field that one
part fixes and another grids counts as that field with its one value. Together their values must
cover the whole product (every value of each field combined, on every fold), each cell in one
part only. Plain Python over GridTable (lpstudy.results.replay.grid_table)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from lpstudy.errors import UserError
from lpstudy.results.replay.grid_table import FOLD, GridTable, Run, from_study, is_numeric_value

if TYPE_CHECKING:
    from lpstudy.db.trial_reader import TrialReader

_UNSET = "(unset)"


def from_studies(reader: TrialReader, names: list[str]) -> GridTable:
    """The table of one grid study, or of several joined (join_tables)."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"--study {repeated[0]} is given twice: name each grid study once")
    return join_tables([from_study(reader, name) for name in names], names)


def join_tables(tables: list[GridTable], names: list[str]) -> GridTable:
    """Grid tables as one (UserError naming what keeps them from being one grid)."""
    if len(tables) == 1:
        return tables[0]
    first = names[0]
    for table, name in zip(tables[1:], names[1:]):
        if table.preset != tables[0].preset:
            raise UserError(f"grid studies {first!r} and {name!r} differ in their preset ({tables[0].preset}, "
                            f"{table.preset}): their runs are not one grid; export them one at a time")
    params: list[str] = []
    for table in tables:
        params += [n for n in table.params if n not in params]
    base = _fixed_apart_from(tables[0], params)
    for table, name in zip(tables[1:], names[1:]):
        other = _fixed_apart_from(table, params)
        if other != base:
            differ = "; ".join(f"{k}: {first} {base.get(k, _UNSET)}, {name} {other.get(k, _UNSET)}"
                               for k in sorted(set(base) | set(other)) if base.get(k, _UNSET) != other.get(k, _UNSET))
            raise UserError(f"grid studies {first!r} and {name!r} differ in their fixed settings ({differ}): "
                            "their runs are not one grid; export them one at a time")
    parts = [_gridded_values(table, name, params) for table, name in zip(tables, names)]
    values = {n: _merged([part[n] for part in parts]) for n in params}
    folds = sorted({f for table in tables for f in table.folds})
    configs = list(itertools.product(*(values[n] for n in params)))
    index = {c: i for i, c in enumerate(configs)}

    runs: dict[tuple[int, int], Run] = {}
    owner: dict[tuple[int, int], str] = {}
    for table, name in zip(tables, names):
        for (c, fold), run in table.runs.items():
            own = dict(zip(table.params, table.configs[c]))
            key = (index[tuple(own.get(n, table.fixed.get(n)) for n in params)], fold)
            if key in runs:
                raise UserError(f"grid studies {owner[key]!r} and {name!r} both ran "
                                f"{_cell(params, configs[key[0]], fold)}: a joined grid takes each cell from one study")
            runs[key], owner[key] = run, name
    total = len(configs) * len(folds)
    if len(runs) < total:
        c, fold = next((c, f) for c in range(len(configs)) for f in folds if (c, f) not in runs)
        raise UserError(f"grid studies {', '.join(names)} together leave {total - len(runs)} of {total} cells of "
                        f"their grid (every value of each field, on every fold) without a run, e.g. "
                        f"{_cell(params, configs[c], fold)}; run those as a grid study and name it too")
    source = {"studies": list(names), **{k: v for k, v in tables[0].source.items() if k not in ("study", "command")}}
    return GridTable(params=tuple(params), values=values, configs=configs, folds=folds, runs=runs,
                     preset=tables[0].preset, fixed=base, source=source)


def _fixed_apart_from(table: GridTable, params: list[str]) -> dict[str, Any]:
    return {k: v for k, v in table.fixed.items() if k not in params}


def _gridded_values(table: GridTable, name: str, params: list[str]) -> dict[str, list[Any]]:
    out = {}
    for n in params:
        if n in table.values:
            out[n] = list(table.values[n])
        elif n in table.fixed:
            out[n] = [table.fixed[n]]
        else:
            raise UserError(f"grid study {name!r} neither fixes nor grids {n}, which another study grids: "
                            "their runs are not one grid")
    return out


def _merged(lists: list[list[Any]]) -> list[Any]:
    """Every value once; numbers in ascending order (∞, "inf", last), other values as first seen."""
    seen: list[Any] = []
    for values in lists:
        seen += [v for v in values if v not in seen]
    if all(is_numeric_value(v) for v in seen):
        return sorted(seen, key=float)
    return seen


def _cell(params: list[str], config: tuple, fold: int) -> str:
    return " ".join(f"{n}={v}" for n, v in zip(params, config)) + f" {FOLD}={fold}"
