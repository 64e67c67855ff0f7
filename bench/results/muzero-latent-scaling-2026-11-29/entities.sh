#!/bin/bash
# issue 52: muzero_repr at its defaults on the tiny cases with entity (variable-length vector) observations,
# seeds 0-2: never run before; fast_sac passes them.   Usage: entities.sh CHECKOUT OUT_JSONL (one heavy --cores 1 job)
set -eu
W=$1; OUT=$2
cd "$W"
env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT \
  --cases sac-entities-continuous sac-two-entities-discrete sac-goal-entities --seeds 0 1 2
