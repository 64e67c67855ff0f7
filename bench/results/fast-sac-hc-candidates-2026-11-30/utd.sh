#!/bin/bash
# issue 56 screen: two updates per env step (steps_per_update 0.5), HalfCheetah-v5 seed 0, 30k steps
cd /work/wt-b
env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench gym --steps 30000 --jobs 1 --continue --progress-every 600 --out /work/s17/utd2 --trainers fast_sac --set hyperparameters.steps_per_update=0.5 --tasks HalfCheetah-v5 --seeds 0
