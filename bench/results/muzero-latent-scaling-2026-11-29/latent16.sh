#!/bin/bash
# issue 52: latent_size 16 (the tiny configs' hidden_units: a wider latent is a linear image of 16 units) with the
# automatic tanh latents, on the tiny vector cases.   Usage: latent16.sh CHECKOUT OUT_JSONL PART
# PART a: lines (seeds 0-9), squares and entity cases (0-2); PART b: the hybrids (0-2).  One heavy --cores 1 job each.
set -u
W=$1; OUT=$2; PART=$3
cd "$W"
T="env PYTHONPATH=$W /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --out $OUT --set latent_size=16"
if [ "$PART" = a ]; then
  $T --cases sac-line-continuous sac-line-discrete --seeds 0 1 2 3 4 5 6 7 8 9
  $T --cases sac-square-continuous sac-square-discrete sac-entities-continuous sac-two-entities-discrete sac-goal-entities --seeds 0 1 2
else
  $T --cases sac-hybrid-1c1d sac-hybrid-2c2d --seeds 0 1 2
fi
