#!/usr/bin/env bash
# The replay benchmark's grid, from the service's own workers: 6 p × 6 learning rates × 3 gains ×
# 2 folds = 216 runs of a 2-layer, 64-dim model (head size 32 and context 64 as the `cpu` preset)
# for 600 steps, evaluated every 40 steps; then exported to benchmarks/data/grid-mid600.json.gz.
# About 90 minutes of both cores of an idle 2-core machine, longer on a busy one. Interrupted, run
# it again: `create` finds the study unchanged and the workers take the cells that are left.
#
#   benchmarks/make_grid.sh [STORAGE_URL]      (default: sqlite:///storage/grid-mid600.db)
set -euo pipefail
STORAGE="${1:-sqlite:///storage/grid-mid600.db}"
STUDY=grid-mid600

lpstudy create --study "$STUDY" --storage "$STORAGE" --sampler grid --preset cpu \
  --p 1,1.5,2,2.5,3,4 --lr 1e-4,4.6e-4,2.2e-3,1e-2,4.6e-2,2.2e-1 --gain-init 3,12,48 --fold 0,1 --folds 10 \
  --set max_steps=600 --set n_layer=2 --set n_embd=64 --set n_head=2 --set eval_interval=40 \
  --set warmup_steps=30 --set threads=1
lpstudy worker --study "$STUDY" --storage "$STORAGE" --devices cpu,cpu --no-progress
lpstudy export-grid --study "$STUDY" --storage "$STORAGE" -o benchmarks/data/grid-mid600.json.gz
