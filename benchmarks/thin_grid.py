"""A needle grid for the search suite: a shipped grid thinned to some of its folds.

Where a grid keeps only two of its folds, a configuration's mean over them carries more of one
fold's noise, and the configurations within 2 % of the best mean can come down to one or two: a
search that returns a configuration near the best of one fold misses there. The runs are the
grid's own (nothing is trained); the file says which folds it kept and from which grid.

    python benchmarks/thin_grid.py smoke-inf --folds 0,3 --name needle-smoke03

writes benchmarks/data/grid-needle-smoke03.json.gz and prints, for every pair of the grid's folds,
how many configurations lie within 2 % and 1 % of the best mean over that pair (the pair with the
fewest makes the needle).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def within(table, folds, margin: float) -> int:
    import numpy as np

    means = np.array([np.mean([table.run(c, f).value for f in folds]) for c in range(len(table.configs))])
    return int((means - means.min() <= margin * means.min()).sum())


def main() -> None:
    from lpstudy.results.replay.grid_table import read_table, write_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", help="a shipped grid: benchmarks/data/grid-GRID.json.gz")
    parser.add_argument("--folds", required=True, help="the folds to keep, comma-separated")
    parser.add_argument("--name", required=True, help="the new grid's name: benchmarks/data/grid-NAME.json.gz")
    args = parser.parse_args()
    table = read_table(ROOT / "benchmarks" / "data" / f"grid-{args.grid}.json.gz")
    for pair in itertools.combinations(table.folds, 2):
        print(f"folds {pair}: {within(table, pair, 0.02)} configurations within 2 % of the best mean, "
              f"{within(table, pair, 0.01)} within 1 %", file=sys.stderr)
    keep = [int(f) for f in args.folds.split(",")]
    missing = [f for f in keep if f not in table.folds]
    if missing:
        raise SystemExit(f"grid {args.grid} has folds {table.folds}, not {missing}")
    thinned = replace(table, folds=keep, runs={k: r for k, r in table.runs.items() if k[1] in keep},
                      source={**table.source, "thinned_from": f"grid-{args.grid}.json.gz", "kept_folds": keep,
                              "command": f"python benchmarks/thin_grid.py {args.grid} --folds {args.folds} "
                                         f"--name {args.name}"})
    out = ROOT / "benchmarks" / "data" / f"grid-{args.name}.json.gz"
    write_table(thinned, out)
    print(f"wrote {out.relative_to(ROOT)}: {len(thinned.configs)} configurations × {len(keep)} folds "
          f"({within(thinned, keep, 0.02)} within 2 % of the best mean)", file=sys.stderr)


if __name__ == "__main__":
    main()
