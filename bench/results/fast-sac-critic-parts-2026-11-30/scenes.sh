#!/bin/bash
# issue 56: which part of CrossQ fails reach_continuous_noisy / switching_noisy? At lr 1e-3 (where SAC's critics
# learn both within the screen budget and CrossQ does not), seeds 0-1: SAC-critic variants, then CrossQ probes
cd /work/wt-probe
PY="env PYTHONPATH=/work/wt-probe /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 2 --jobs 1 --scenes reach_continuous_noisy switching_noisy --set hyperparameters.learning_rate=0.001"
$PY --set hyperparameters.tau=1.0 --out /work/s16/parts/sac-notarget
$PY --set hyperparameters.critic_layer_norm=false --out /work/s16/parts/sac-noln
CQ="$PY --set hyperparameters.critic_batch_renorm=true"
CQ_PROBE=target $CQ --out /work/s16/parts/cq-target
CQ_PROBE=noinput $CQ --out /work/s16/parts/cq-noinput
CQ_PROBE=actorbatch $CQ --out /work/s16/parts/cq-actorbatch
$PY --set hyperparameters.tau=1.0 --set hyperparameters.critic_layer_norm=false --out /work/s16/parts/sac-notarget-noln
