#!/bin/bash
# issue 56: CrossQ's recipe switched on in fast_sac's MuJoCo config at its own learning rate (3e-4, what a user's
# sac config has), not the preset's 1e-3: what a size-gated default would train. Seed 0, both tuning tasks, 100k.
cd /work/wt-run
PYTHONPATH=/work/wt-run /work/main/.venv/bin/python -m bench gym --trainers fast_sac --tasks HalfCheetah-v5,Hopper-v5 --steps 100000 --seeds 0 --jobs 1 --continue --out /work/s15/crossq-lr3e-4 --set hyperparameters.critic_batch_renorm=true
