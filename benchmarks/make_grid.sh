#!/usr/bin/env bash
# The replay benchmark's grid, from the service's own workers: 6 p × 7 learning rates × 3 gains ×
# 2 folds = 252 runs of a 2-layer, 64-dim model (head size 32 and context 64 as the `cpu` preset)
# for 600 steps, evaluated every 40 steps; then exported to benchmarks/data/grid-mid600.json.gz.
# The learning rates step by ×4.6 from 1e-4 (too small) to 1.0, the most the training field allows.
#
# Two grid studies that share every fixed setting, joined by `export-grid`: the 6 learning rates up
# to 0.22 (the grid's first 216 runs), then lr = 1.0 (36 runs) added later. An Optuna study keeps a
# categorical parameter's choices for all its trials, so a grid study cannot take another value of
# lr once it has run; a column added later is a study of its own. This script is what made the
# shipped file, in the order it was made.
#
# About 1¾ hours of both cores of an idle 2-core machine, longer on a busy one. Interrupted, run it
# again: `create` finds each study unchanged and the workers take the cells that are left.
#
#   benchmarks/make_grid.sh [STORAGE_URL]      (default: sqlite:///storage/grid-mid600.db)
set -euo pipefail
STORAGE="${1:-sqlite:///storage/grid-mid600.db}"
STUDY=grid-mid600
GRID=(--storage "$STORAGE" --sampler grid --preset cpu
      --p 1,1.5,2,2.5,3,4 --gain-init 3,12,48 --fold 0,1 --folds 10
      --set max_steps=600 --set n_layer=2 --set n_embd=64 --set n_head=2 --set eval_interval=40
      --set warmup_steps=30 --set threads=1)

lpstudy create --study "$STUDY" --lr 1e-4,4.6e-4,2.2e-3,1e-2,4.6e-2,2.2e-1 "${GRID[@]}"
lpstudy create --study "$STUDY-lr1" --lr 1 "${GRID[@]}"
for study in "$STUDY" "$STUDY-lr1"; do
  lpstudy worker --study "$study" --storage "$STORAGE" --devices cpu,cpu --no-progress
done
lpstudy export-grid --study "$STUDY" --study "$STUDY-lr1" --storage "$STORAGE" -o benchmarks/data/grid-mid600.json.gz
