#!/bin/bash
# issue 56: fast_sac set up as Stable-Baselines3's SAC, HalfCheetah-v5 seed 0, 100k steps; $1 = output folder
python -m bench gym --trainers fast_sac --tasks HalfCheetah-v5 --steps 100000 --seeds 0 --jobs 1 --out $1 \
  --set hyperparameters.network_activation=relu --set hyperparameters.network_init=torch --set hyperparameters.n_step=1 \
  --set hyperparameters.critic_layer_norm=false --set hyperparameters.actor_min_q=true
