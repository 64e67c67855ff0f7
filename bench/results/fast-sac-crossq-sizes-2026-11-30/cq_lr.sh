#!/bin/bash
# issue 56: CrossQ at its own learning rate 1e-3 against SAC's critics at 1e-3, the two noisy scenes, seeds 0-1
cd /work/wt-run2
PY="env PYTHONPATH=/work/wt-run2 /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 2 --jobs 1 --set hyperparameters.learning_rate=0.001"
$PY --scenes reach_continuous_noisy switching_noisy --out /work/s15/cqn/sac-lr1e-3
$PY --scenes switching_noisy --set hyperparameters.critic_batch_renorm=true --out /work/s15/cqn/crossq-lr1e-3-switching
