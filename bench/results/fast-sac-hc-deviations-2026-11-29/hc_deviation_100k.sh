#!/bin/bash
# issue 56: fast_sac's deviations from SAC on HalfCheetah-v5 to 100k, seed 0, one at a time ($1 = KEY=VALUE), run as
# `heavy --cores 1 -- hc_deviation_100k.sh critic_layer_norm=false` from a clean worktree of main 64cdc41
PYTHONPATH=. python -m bench gym --trainers fast_sac --tasks HalfCheetah-v5 --steps 100000 --seeds 0 --jobs 1 \
  --out "results/hcdev-$(echo "$1" | tr '=.' '__')" --set "hyperparameters.$1"
