#!/bin/bash
# issue 55 probe: fast_sac's update at 2x256, batch 256, one thread, fp32 against the hidden 256x256 GEMMs in bf16,
# alternating in one job on one pinned core (heavy --cores 1).  $1 = a checkout with hidden_bf16.diff applied.
cd "$1"
for v in "" 1 "" 1; do
  echo "== PROBE_BF16=$v"
  env PROBE_BF16=$v PYTHONPATH="$1" python -m bench speed update --trainers fast_sac --threads 1 --no-builtin --hidden-units 256 --batch-size 256 --updates 300 --budget-s 40
done
