#!/bin/bash
# issue 56: the whole validation screen at learning rate 1e-3 with the linear schedule (3 seeds)
cd /work/wt-b
env PYTHONPATH=/work/wt-b /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --out /work/s16/screen-lr1e3-linear-all --set hyperparameters.learning_rate=0.001 --set hyperparameters.learning_rate_schedule=linear
