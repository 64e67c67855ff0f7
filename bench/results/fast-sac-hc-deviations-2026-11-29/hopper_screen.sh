#!/bin/bash
# issue 56: fast_sac stuck near 300-340 on Hopper-v5 from 10k to 100k (seeds 0-1, 760f8e5): which deviation?
# Hopper seed 0 to 30k, one deviation off at a time, code 760f8e5 (the default's 100k records' commit)
cd "${1:?a clean checkout of 760f8e5}"; export PYTHONPATH=$1; PY=${PY:-python}; OUT=${2:?output folder}
for v in "n_step=1" "critic_layer_norm=false" "actor_min_q=true"; do
  name=${v%%=*}
  $PY -m bench gym --trainers fast_sac --tasks Hopper-v5 --steps 30000 --seeds 0 --jobs 1 --continue --progress-every 600 \
    --out "$OUT/$name" --set hyperparameters.$v
done
