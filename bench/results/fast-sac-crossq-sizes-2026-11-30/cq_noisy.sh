#!/bin/bash
# issue 56: which part of CrossQ's recipe fails reach_continuous_noisy? drop-in config, screen budget, seeds 0-1
cd /work/wt-run2
PY="env PYTHONPATH=/work/wt-run2 /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 2 --jobs 1 --scenes reach_continuous_noisy --set hyperparameters.critic_batch_renorm=true"
$PY --out /work/s15/cqn/base
$PY --set hyperparameters.actor_update_every=1 --out /work/s15/cqn/actor1
$PY --set hyperparameters.adam_beta1=0.9 --out /work/s15/cqn/beta09
$PY --set hyperparameters.n_step=2 --out /work/s15/cqn/nstep2
$PY --set hyperparameters.batch_renorm_warmup=1000 --out /work/s15/cqn/warm1k
$PY --set hyperparameters.learning_rate=0.001 --out /work/s15/cqn/lr1e-3
