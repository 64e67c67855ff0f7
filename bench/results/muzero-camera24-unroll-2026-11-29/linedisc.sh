#!/bin/bash
# issue 52: muzero_repr sac-line-discrete seed 1 (0.872 at defaults): one-setting screen, seed 1
cd /work/wt-run8
T="env PYTHONPATH=/work/wt-run8 /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --cases sac-line-discrete --out /work/s8/linedisc.jsonl"
$T --seeds 1
for s in num_unroll_steps=3 model_update_interval=1 rl_gradient_to_repr=false head_reads_target_repr=true n_step=1 model_learning_rate=0.0003 latent_size=16 value_loss_weight=0.0; do
  $T --seeds 1 --set $s
done
