#!/bin/bash
# Issue 55's 20k pair with the other core idle: run as `../shared/bin/heavy -- idle_pairs.sh 1 2` (no --cores 1, so
# heavy holds both cores), the invocation pinned to core 0; records in pair-20k-<commit>-idle-<N>/ beside this script.
# Logs (pair-*.log) and builds stay out of git; runs.jsonl is the record.
cd "$(git rev-parse --show-toplevel)"
study=bench/results/fast-sac-startup-2026-12-03
commit=$(git rev-parse --short=7 HEAD)
for i in "$@"; do
  out=$study/pair-20k-$commit-idle-$i
  taskset -c 0 .venv/bin/python -m bench gym --trainers fast_sac,sb3_sac --tasks HalfCheetah-v5 --steps 20000 \
    --seeds 0 --jobs 1 --continue --out $out > $out.log 2>&1
done
