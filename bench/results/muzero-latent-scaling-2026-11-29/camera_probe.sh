#!/bin/bash
# issue 52: one-setting probes on the one-camera continuous tiny case at the defaults (min-max with images), seeds 0-2.
# Usage: camera_probe.sh CHECKOUT OUT_JSONL (one heavy --cores 1 job)
set -u
W=$1; OUT=$2
cd "$W"
for s in random_shift_pad=0 rl_gradient_to_repr=false model_update_interval=2 latent_size=16; do
  env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT \
    --cases sac-camera-continuous --seeds 0 1 2 --set $s
done
