#!/bin/bash
# issue 52: latent_scaling: tanh (the setting, 42eb44d) on muzero_repr's other tiny vector cases, seeds 0-2.
# Usage: tanh_rest.sh CHECKOUT OUT_JSONL (one heavy --cores 1 job)
set -u
W=$1; OUT=$2
cd "$W"
env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT \
  --cases sac-square-continuous sac-square-discrete sac-goal-entities sac-hybrid-1c1d sac-hybrid-2c2d --seeds 0 1 2 \
  --set latent_scaling='"tanh"'
