#!/bin/bash
# issue 52: muzero_repr's tiny camera cases (never recorded before) at the defaults (min-max with images) or with
# latent_scaling: tanh.   Usage: camera.sh CHECKOUT OUT_JSONL default|tanh SEEDS CASES... (one heavy --cores 1 job)
set -u
W=$1; OUT=$2; MODE=$3; SEEDS=$4; shift 4
cd "$W"
ARGS=(--trainers muzero_repr --out "$OUT" --cases "$@" --seeds $SEEDS)
[ "$MODE" = tanh ] && ARGS+=(--set 'latent_scaling="tanh"')
env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny "${ARGS[@]}"
