#!/bin/bash
# issue 52: reach_continuous (vector), 12k steps, drop-in config, 8 agents: fast_sac and muzero_repr's head on
# h / the initial h frozen / a hard copy every 250 model updates / an EMA copy, seeds 0-2, seed-major
cd "${1:?a clean checkout}"; export PYTHONPATH=$1; PY=${PY:-python}; OUT=${2:?output folder}
mkdir -p "$OUT"
for s in 0 1 2; do
  H="$PY -m bench holding --scene reach_continuous --seeds $s --steps 12000 --areas 1 --config minimal --json $OUT/runs.jsonl"
  $H --trainers fast_sac
  $H --trainers muzero_repr
  $H --trainers muzero_repr --set head_reads_target_repr=true head_repr_update_period=1000000000
  $H --trainers muzero_repr --set head_reads_target_repr=true
  $H --trainers muzero_repr --set head_reads_target_repr=true head_repr_update_tau=0.005 head_repr_update_period=1
done
