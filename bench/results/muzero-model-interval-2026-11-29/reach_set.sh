#!/bin/bash
# issue 52: reach_continuous (vector tuning scene), minimal config, 24k steps, seeds 0-2, one job: fast_sac at its
# defaults and muzero_repr with the given overrides.   Usage: reach_set.sh CHECKOUT OUT_JSONL [SETTING...]
set -u
W=$1; OUT=$2; shift 2
cd "$W"
SET=""; [ $# -gt 0 ] && SET="--set $*"
H="env PYTHONPATH=$W /work/main/.venv/bin/python -m bench holding --scene reach_continuous --config minimal --steps 24000 --areas 1 --json $OUT"
for s in 0 1 2; do
  $H --trainers fast_sac --seeds $s
  $H --trainers muzero_repr --seeds $s $SET
done
