#!/bin/bash
# issue 56: SAC's critics (today's fast_sac) at learning rate 1e-3 on MuJoCo at 100k, seeds 1 and 2
cd /work/wt-b
for s in 1 2; do
env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench gym --trainers fast_sac --tasks Hopper-v5,HalfCheetah-v5 --steps 100000 --seeds $s --jobs 1 --continue --progress-every 600 --out /work/s16/lr1e3-s$s --set hyperparameters.learning_rate=0.001 || exit 1
done
