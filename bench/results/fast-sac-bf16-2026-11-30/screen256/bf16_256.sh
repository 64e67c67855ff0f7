#!/bin/bash
# issue 55: update_precision bf16 against sac256 (fp32, same settings) on the four continuous vector scenes at
# MuJoCo sizes (batch 256, 2x256, one update per env step), the screening budget, 3 seeds.
cd /work/wt-run
S="balance_big_reward_long balance_distractors reach_continuous_noisy switching_noisy"
SZ="--set hyperparameters.batch_size=256 --set network_settings.hidden_units=256 --set hyperparameters.steps_per_update=1.0"
PYTHONPATH=/work/wt-run /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --scenes $S $SZ --set hyperparameters.update_precision=bf16 --out /work/s15/bf16_256
