#!/bin/bash
# issue 52: the camera tuning scene with latent_scaling: tanh (the default keeps min-max with images), one seed per job.
# Usage: camera24.sh CHECKOUT OUT_JSONL SEED
set -u
W=$1; OUT=$2; SEED=$3
cd "$W"
env PYTHONPATH=$W /work/main/.venv/bin/python -m bench holding --scene reach_continuous_camera24 --config minimal \
  --trainers muzero_repr --seeds $SEED --steps 24000 --areas 1 --set latent_scaling=tanh --json $OUT
