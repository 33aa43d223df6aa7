#!/usr/bin/env bash
# The replay suite's grids, run by the service's own workers and exported as compact tables beside
# the shipped grid-mid600 (make_grid.sh). Each grid differs from the others where a search default
# can be fooled: model scale and training length, a space with p = ∞, the matched gain.
#
#   smoke-inf    the `smoke` model, 150 steps · 6 p (∞ among them) × 6 lr × 3 gains × 4 folds = 432 runs
#                (folds 0, 1 first; folds 2, 3 a grid study of their own, joined to the file by
#                benchmarks/add_grid_folds.py: 216 runs, about 10 CPU-minutes)
#   matched800   2 layers × 64 dims, context 64, 800 steps · matched gain · 7 p × 7 lr × 2 folds = 98 runs
#   small300-inf (held out of the choice of defaults) the smoke model's shape at 300 steps and other
#                lr, gain and p values · 6 p (∞ among them) × 6 lr × 3 gains × 2 folds = 216 runs
#
# About 60 CPU-minutes in all (one thread a worker, two workers), longer beside other work.
# Interrupted, run it again: `create` finds each study unchanged and the workers take the cells that
# are left; a grid already exported is skipped.
#
#   benchmarks/make_grids.sh [GRID ...]      (default: all three; STORAGE=sqlite:///storage/grids.db)
set -euo pipefail
cd "$(dirname "$0")/.."
STORAGE="${STORAGE:-sqlite:///storage/grids.db}"
WORKERS="${WORKERS:-cpu,cpu}"
# shellcheck disable=SC2054  # "0,1" is one argument: the folds
FIXED=(--storage "$STORAGE" --sampler grid --folds 10 --fold 0,1 --set threads=1)
# shellcheck disable=SC2054
MORE_FOLDS=(--storage "$STORAGE" --sampler grid --folds 10 --fold 2,3 --set threads=1)
# The grids scored on more than folds 0 and 1 (the suite's grid with p = ∞ and the noisiest folds).
FOUR_FOLDS=" smoke-inf "

grid_args() {
  case "$1" in
    smoke-inf) echo --preset smoke --p 1,1.5,2,3,4,inf --lr 3e-4,1e-3,3e-3,1e-2,3e-2,1e-1 --gain-init 3,12,48 \
                    --set eval_interval=10 ;;
    matched800) echo --preset cpu --p 1,1.5,2,2.5,3,4,inf --lr 3e-4,1e-3,2.2e-3,4.6e-3,1e-2,2.2e-2,4.6e-2 \
                    --gain-init matched --set max_steps=800 --set n_layer=2 --set n_embd=64 --set n_head=2 \
                    --set eval_interval=50 --set warmup_steps=40 ;;
    small300-inf) echo --preset smoke --p 1,2,2.5,3,4,inf --lr 5e-4,1.5e-3,5e-3,1.5e-2,5e-2,1.5e-1 --gain-init 6,16,32 \
                    --set max_steps=300 --set eval_interval=20 --set warmup_steps=20 ;;
    *) echo "make_grids.sh: unknown grid '$1' (smoke-inf, matched800, small300-inf)" >&2; return 2 ;;
  esac
}

for name in "${@:-smoke-inf matched800 small300-inf}"; do
  for grid in $name; do
    out="benchmarks/data/grid-$grid.json.gz"
    if [ -f "$out" ]; then
      echo "make_grids.sh: $out exists; skipped"
    else
      # shellcheck disable=SC2046  # grid_args' words are options
      lpstudy create --study "grid-$grid" $(grid_args "$grid") "${FIXED[@]}"
      lpstudy worker --study "grid-$grid" --storage "$STORAGE" --devices "$WORKERS" --no-progress
      lpstudy export-grid --study "grid-$grid" --storage "$STORAGE" -o "$out"
    fi
    if [[ "$FOUR_FOLDS" == *" $grid "* ]] && ! python -c "import sys; from lpstudy.results.replay.grid_table import read_table; \
        sys.exit(0 if 3 in read_table('$out').folds else 1)"; then  # folds 2 and 3 joined to the file, once
      # shellcheck disable=SC2046
      lpstudy create --study "grid-$grid-folds23" $(grid_args "$grid") "${MORE_FOLDS[@]}"
      lpstudy worker --study "grid-$grid-folds23" --storage "$STORAGE" --devices "$WORKERS" --no-progress
      python benchmarks/add_grid_folds.py "$grid" "grid-$grid-folds23" --storage "$STORAGE"
    fi
  done
done
