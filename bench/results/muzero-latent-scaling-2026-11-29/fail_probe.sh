#!/bin/bash
# issue 52: one-setting probes on three failing (case, seed) pairs of muzero_repr's defaults: the entity cases'
# seed 2 (continuous -0.053, discrete -0.043) and the discrete line's seed 9 (0.012).
# Usage: fail_probe.sh CHECKOUT OUT_JSONL (one heavy --cores 1 job)
set -u
W=$1; OUT=$2
cd "$W"
T="env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT"
for s in rl_gradient_to_repr=false model_update_interval=1000000000 latent_size=16 model_learning_rate=0.0003 head_reads_target_repr=true num_unroll_steps=1; do
  $T --cases sac-entities-continuous sac-two-entities-discrete --seeds 2 --set $s
  $T --cases sac-line-discrete --seeds 9 --set $s
done
