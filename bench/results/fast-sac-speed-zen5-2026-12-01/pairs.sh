#!/bin/bash
# issue 55's 20k pair on session 19's machine (AMD EPYC family 26, AVX-512 BF16), from a worktree of main: a repeat
# with the per-machine compile cache warm (as the first invocation, 03:50 UTC) and one with a cold cache
# (XDG_CACHE_HOME pointing at an empty folder: a fresh machine's first run, compile included).
WT=${WT:-/work/wt-g}
OUT=${OUT:-/work/s19}
G="env PYTHONPATH=$WT /work/main/.venv/bin/python -m bench gym --trainers fast_sac,sb3_sac --tasks HalfCheetah-v5 --steps 20000 --seeds 0 --jobs 1"
cd $WT
if [ "$1" != "more" ]; then
  $G --out $OUT/pair20k-warm2 || exit 1
  rm -rf $OUT/cold-cache && mkdir -p $OUT/cold-cache
  XDG_CACHE_HOME=$OUT/cold-cache $G --out $OUT/pair20k-cold
fi
# then (04:08 UTC, a second job): a third warm 20k pair, and the 100k pair on HalfCheetah-v5 (seed 0)
if [ "$1" = "more" ]; then
  $G --out $OUT/pair20k-warm3 || exit 1
  env PYTHONPATH=$WT /work/main/.venv/bin/python -m bench gym --trainers fast_sac,sb3_sac --tasks HalfCheetah-v5 \
    --steps 100000 --seeds 0 --jobs 1 --progress-every 600 --out $OUT/pair100k
fi
