#!/bin/bash
# The study's runs in one heavy job (core 1), most informative first: the reach_continuous screen (seed 0, 12k
# steps, the drop-in config, 1 area = 8 agents) of fast_sac and muzero_repr's new default, the same-run profile of
# both (8 agents), then the other variants.
# Usage: run_study.sh RUN_CHECKOUT OUT_DIR
set -u
RUN=$1; OUT=$2
PY=/work/main/.venv/bin/python
mkdir -p "$OUT"
cd "$RUN"
export PYTHONPATH=$RUN
H="$PY -m bench holding --scene reach_continuous --seeds 0 --steps 12000 --areas 1 --config minimal --json $OUT/runs.jsonl"
$H --trainers fast_sac muzero_repr  # muzero_repr defaults: the head reads h's copy, a hard copy every 250 model updates
$PY -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 \
  --out "$OUT/profile" --note "head reads the target copy, one encoder pass"
$H --trainers muzero_repr --set head_repr_update_period=1000000000  # frozen: the initial h under the head for ever
$H --trainers muzero_repr --set head_repr_update_tau=0.005 head_repr_update_period=1  # EMA
$H --trainers muzero_repr --set model_update_interval=2
$PY -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 --set model_update_interval=2 \
  --out "$OUT/profile-interval2" --note "model_update_interval 2 (fast_sac: no such field)"
$H --trainers muzero_repr --set train_repr_prediction=true repr_prediction_target=target repr_prediction_loss=mse
