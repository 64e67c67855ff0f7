#!/bin/bash
# issue 56: fast_sac at learning rate 1e-3: the validation screen (3 seeds), then MuJoCo seeds 1 and 2 at 100k
cd /work/wt-b
env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --out /work/s16/screen-lr1e3 --set hyperparameters.learning_rate=0.001 || exit 1
bash /work/s16/lr1e3b.sh
