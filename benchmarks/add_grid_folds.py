"""Folds added to a shipped grid: a grid study of the same settings over further folds, joined to
the grid's table file (lpstudy.results.replay.grid_join) and written in its place.

    python benchmarks/add_grid_folds.py GRID STUDY [--storage URL]

GRID names benchmarks/data/grid-GRID.json.gz; STUDY is the grid study of the new folds (made by
`lpstudy create ... --fold 2,3` with the grid's other settings and run by `lpstudy worker`). The
join refuses parts that differ in any fixed setting, a cell twice or a cell missing; a study with
cells still to run is refused with how many (run its workers again, then this).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from lpstudy.db.kinds import open_reader
    from lpstudy.errors import UserError
    from lpstudy.results.replay.grid_join import join_tables
    from lpstudy.results.replay.grid_table import from_study, read_table, write_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid")
    parser.add_argument("study")
    parser.add_argument("--storage", default="sqlite:///storage/grids.db")
    args = parser.parse_args()
    path = ROOT / "benchmarks" / "data" / f"grid-{args.grid}.json.gz"
    try:
        old = read_table(path)
        new = from_study(open_reader(args.storage), args.study)
        if set(new.folds) <= set(old.folds):
            print(f"{path.name} has folds {old.folds} already; nothing to add", file=sys.stderr)
            return
        joined = join_tables([old, new], [old.source.get("study", args.grid), args.study])
    except UserError as exc:
        print(f"add_grid_folds.py: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    joined.source = {**old.source, "added_folds": {"study": args.study, "storage": args.storage, "folds": new.folds,
                                                   "command": f"python benchmarks/add_grid_folds.py {args.grid} {args.study}"}}
    write_table(joined, path)
    print(f"wrote {path.relative_to(ROOT)}: folds {joined.folds}, {joined.shape()}", file=sys.stderr)


if __name__ == "__main__":
    main()
