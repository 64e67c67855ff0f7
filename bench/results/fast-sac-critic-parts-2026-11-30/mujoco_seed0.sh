#!/bin/bash
# issue 56: SAC's critics (today's fast_sac) at learning rate 1e-3 on MuJoCo at 100k, seed 0
cd /work/wt-b
env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench gym --trainers fast_sac --tasks Hopper-v5,HalfCheetah-v5 --steps 100000 --seeds 0 --jobs 1 --continue --progress-every 600 --out /work/s16/lr1e3 --set hyperparameters.learning_rate=0.001
