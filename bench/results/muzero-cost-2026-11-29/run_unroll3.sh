#!/bin/bash
# issue 52: num_unroll_steps 3 (default 5) at today's defaults (model_update_interval null -> 2 with this vector
# scene), reach_continuous, 12k steps, drop-in config, 1 area = 8 agents, seeds 0-2, one after another.
# Usage: run_unroll3.sh CLEAN_CHECKOUT OUT_DIR (records appended to OUT_DIR/runs.jsonl).
cd "${1:?a clean checkout}"; export PYTHONPATH=$1; PY=${PY:-python}; OUT=${2:?output folder}
mkdir -p "$OUT"
for s in 0 1 2; do
  $PY -m bench holding --scene reach_continuous --seeds $s --steps 12000 --areas 1 --config minimal \
    --json "$OUT/runs.jsonl" --trainers muzero_repr --set num_unroll_steps=3
done
