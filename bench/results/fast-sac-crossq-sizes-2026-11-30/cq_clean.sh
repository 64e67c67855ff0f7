#!/bin/bash
# issue 56: CrossQ's recipe on the noise-free tuning twins of the two scenes it does not learn (reach_continuous,
# switching), against SAC's critics; drop-in config, screen budget, seeds 0-1
cd /work/wt-run2
PY="env PYTHONPATH=/work/wt-run2 /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 2 --jobs 1 --scenes reach_continuous switching"
$PY --out /work/s15/cqn/clean-sac
$PY --set hyperparameters.critic_batch_renorm=true --out /work/s15/cqn/clean-crossq
