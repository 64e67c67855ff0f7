#!/bin/bash
# issue 56, clean rerun (a clean worktree; update_precision fp32 explicit): SAC's critics on the two noisy scenes
# (whose first runs picked up an uncommitted edit), then CrossQ's recipe on all four, at MuJoCo sizes
# (batch 256, 2x256, one update per env step), the screening budget, 3 seeds.
cd /work/wt-run2
PY="env PYTHONPATH=/work/wt-run2 /work/main/.venv/bin/python"
SZ="--set hyperparameters.batch_size=256 --set network_settings.hidden_units=256 --set hyperparameters.steps_per_update=1.0 --set hyperparameters.update_precision=fp32"
$PY -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --scenes reach_continuous_noisy switching_noisy $SZ --out /work/s15/sac256b
$PY -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --scenes balance_big_reward_long balance_distractors reach_continuous_noisy switching_noisy $SZ --set hyperparameters.critic_batch_renorm=true --out /work/s15/crossq256
