#!/bin/bash
# issue 56 candidate: the SAC paper's network (relu + torch init) with lr 1e-3, configs/gym otherwise
cd /work/wt-b
G="env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench gym --steps 100000 --jobs 1 --continue --progress-every 600 --out /work/s17/cand --trainers fast_sac --set hyperparameters.learning_rate=0.001 --set hyperparameters.network_activation=relu --set hyperparameters.network_init=torch"
$G --tasks HalfCheetah-v5 --seeds 0 || exit 1
$G --tasks Hopper-v5 --seeds 0 || exit 1
