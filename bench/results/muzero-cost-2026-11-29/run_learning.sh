#!/bin/bash
# issue 52 cost: does learning hold with a model update every second SAC update? reach_continuous (vector), 12k
# steps, drop-in config, 1 area = 8 agents, seeds 0-2, seed-major: muzero_repr with model_update_interval 1 (the
# old default) and 2, in one invocation, as bench/results/muzero-target-encoder-2026-11-28/three-seeds/run.sh.
# Usage: run_learning.sh CLEAN_CHECKOUT OUT_DIR SEED... [-- INTERVAL...] (default intervals: 2 1). Run here as
# three heavy jobs: seed 2 (intervals 2 and 1), seeds 0 1 interval 2, then seeds 0 1 interval 1.
cd "${1:?a clean checkout}"; export PYTHONPATH=$1; PY=${PY:-python}; OUT=${2:?output folder}
mkdir -p "$OUT"
shift 2
SEEDS=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do SEEDS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
INTERVALS=("$@"); [ ${#INTERVALS[@]} -eq 0 ] && INTERVALS=(2 1)
for s in "${SEEDS[@]}"; do
  H="$PY -m bench holding --scene reach_continuous --seeds $s --steps 12000 --areas 1 --config minimal --json $OUT/runs.jsonl"
  for i in "${INTERVALS[@]}"; do
    $H --trainers muzero_repr --set model_update_interval=$i
  done
done
