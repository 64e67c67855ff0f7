#!/bin/bash
# issue 52: muzero_repr's vector tiny suite with one override.  Usage: tiny_set.sh CHECKOUT OUT_JSONL SETTING...
set -u
W=$1; OUT=$2; shift 2
cd "$W"
T="env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT --set $*"
$T --cases sac-line-continuous sac-line-discrete --seeds 0 1 2 3 4 5 6 7 8 9
$T --cases sac-square-continuous sac-square-discrete sac-entities-continuous sac-two-entities-discrete sac-goal-entities --seeds 0 1 2
$T --cases sac-hybrid-1c1d sac-hybrid-2c2d --seeds 0 1 2
