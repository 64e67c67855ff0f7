#!/bin/bash
# A/B: fast_sac 20k HalfCheetah-v5 seed 0, glibc defaults (MLAGENTS_PLUGINS_MALLOC_DEFAULTS=1) against the fixed
# thresholds, alternating; run on one pinned core from a worktree of 8c647cf: WT=... heavy --cores 1 -- ab.sh
cd "${WT:-.}"
for i in 1 2; do
  for m in defaults fixed; do
    if [ $m = defaults ]; then export MLAGENTS_PLUGINS_MALLOC_DEFAULTS=1; else unset MLAGENTS_PLUGINS_MALLOC_DEFAULTS; fi
    PYTHONPATH="${WT:-.}" ${PY:-.venv/bin/python} -m bench gym --trainers fast_sac --tasks HalfCheetah-v5 --steps 20000 \
      --seeds 0 --jobs 1 --progress-every 0 --out "${OUT:-/tmp/malloc}/$m-$i"
  done
done
