#!/bin/bash
# issue 52: muzero_repr with a model update on every SAC update (model_update_interval: 1) on the discrete tiny
# cases: the line over seeds 0-9 (defaults: 8/10, seeds 1 and 9 fail), the square over seeds 0-2.
# Usage: interval1.sh CHECKOUT OUT_JSONL   (one heavy --cores 1 job)
set -eu
W=$1; OUT=$2
cd "$W"
T="env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT"
$T --cases sac-line-discrete --seeds 0 1 2 3 4 5 6 7 8 9 --set model_update_interval=1
$T --cases sac-square-discrete --seeds 0 1 2 --set model_update_interval=1
