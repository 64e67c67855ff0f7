#!/bin/bash
# issue 52: the latent-scaling probe (latent_scaling_probe.py) on muzero_repr's tiny vector cases that fail a seed
# at the defaults: the entity cases over seeds 0-2, the lines over seeds 0-9.
# Usage: latent_scaling.sh CHECKOUT OUT_JSONL MODE... (one heavy --cores 1 job)
set -u
W=$1; OUT=$2; shift 2
D=$(dirname "$(readlink -f "$0")")
cd "$W"
for mode in "$@"; do
  P="env PYTHONPATH=$W /work/main/.venv/bin/python $D/latent_scaling_probe.py $mode $OUT -- --trainers muzero_repr"
  $P --cases sac-entities-continuous sac-two-entities-discrete --seeds 0 1 2
  $P --cases sac-line-discrete sac-line-continuous --seeds 0 1 2 3 4 5 6 7 8 9
done
