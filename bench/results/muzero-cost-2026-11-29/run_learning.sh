#!/bin/bash
# issue 52 cost: does learning hold with a model update every second SAC update? reach_continuous (vector), 12k
# steps, drop-in config, 1 area = 8 agents, seeds 0-2, seed-major: muzero_repr with model_update_interval 1 (the
# old default) and 2, in one invocation, as bench/results/muzero-target-encoder-2026-11-28/three-seeds/run.sh.
# Usage: run_learning.sh CLEAN_CHECKOUT OUT_DIR SEED... (two heavy jobs here: seeds 0 1, then seed 2)
cd "${1:?a clean checkout}"; export PYTHONPATH=$1; PY=${PY:-python}; OUT=${2:?output folder}
mkdir -p "$OUT"
shift 2
for s in "$@"; do
  H="$PY -m bench holding --scene reach_continuous --seeds $s --steps 12000 --areas 1 --config minimal --json $OUT/runs.jsonl"
  $H --trainers muzero_repr --set model_update_interval=2
  $H --trainers muzero_repr --set model_update_interval=1
done
