#!/bin/bash
# The study's runs in one heavy job (core 1): profiles (before: b1ee3dc, after: this branch), then the
# reach_continuous screen (seed 0, 12k steps, the drop-in config, 1 area = 8 agents).
# Usage: run_study.sh BASE_CHECKOUT RUN_CHECKOUT OUT_DIR
set -u
BASE=$1; RUN=$2; OUT=$3
PY=/work/main/.venv/bin/python
mkdir -p "$OUT"
cd "$BASE" && PYTHONPATH=$BASE $PY -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 \
  --steps 6000 --out "$OUT/profile-before" --note "before: b1ee3dc (head reads h)"
cd "$RUN"
PYTHONPATH=$RUN $PY -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 \
  --out "$OUT/profile-after" --note "after: head reads the target copy, one encoder pass"
PYTHONPATH=$RUN $PY -m bench profile --trainers muzero_repr --agents 8 --rounds 1 --steps 6000 \
  --set model_update_interval=2 --out "$OUT/profile-after-interval2" --note "after + model_update_interval 2"
H="$PY -m bench holding --scene reach_continuous --seeds 0 --steps 12000 --areas 1 --config minimal --json $OUT/runs.jsonl"
PYTHONPATH=$RUN $H --trainers fast_sac
PYTHONPATH=$RUN $H --trainers muzero_repr  # defaults: the copy, hard every 250 model updates
PYTHONPATH=$RUN $H --trainers muzero_repr --set head_repr_update_tau=0.005 head_repr_update_period=1  # EMA
PYTHONPATH=$RUN $H --trainers muzero_repr --set train_repr_prediction=true repr_prediction_target=target repr_prediction_loss=mse
PYTHONPATH=$RUN $H --trainers muzero_repr --set head_repr_update_period=1000000000  # frozen: the initial h forever
PYTHONPATH=$RUN $H --trainers muzero_repr --set model_update_interval=2
