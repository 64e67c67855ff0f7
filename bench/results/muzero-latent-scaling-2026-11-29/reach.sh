#!/bin/bash
# issue 52: reach_continuous (vector tuning scene), the defaults benchmark's drop-in config (--config minimal), 24k
# steps, seeds 0-2, one job: fast_sac at its defaults and muzero_repr with latent_scaling: tanh (at its min_max
# default: the rlgrad study, 15k / 18k / 21k beside fast_sac's 16k / 18k / 23k).   Usage: reach.sh CHECKOUT OUT_JSONL
set -u
W=$1; OUT=$2
cd "$W"
H="env PYTHONPATH=$W /work/main/.venv/bin/python -m bench holding --scene reach_continuous --config minimal --steps 24000 --areas 1 --json $OUT"
for s in 0 1 2; do
  $H --trainers fast_sac --seeds $s
  $H --trainers muzero_repr --seeds $s --set latent_scaling=tanh
done
