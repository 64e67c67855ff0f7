#!/bin/bash
# issue 52: one-setting probes beside latent_scaling: tanh on the continuous line's seed 1 (0.042 with tanh alone).
# Usage: tanh_probe.sh CHECKOUT OUT_JSONL (one heavy --cores 1 job)
set -u
W=$1; OUT=$2
cd "$W"
T="env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT --cases sac-line-continuous --seeds 1"
for s in rl_gradient_to_repr=false model_update_interval=1 model_update_interval=1000000000 latent_size=16 model_learning_rate=0.0003 num_unroll_steps=3; do
  $T --set latent_scaling='"tanh"' $s
done
