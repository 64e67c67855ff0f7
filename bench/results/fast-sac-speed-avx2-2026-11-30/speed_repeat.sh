#!/bin/bash
# issue 55: the 20k HalfCheetah-v5 pair (fast_sac, SB3 SAC, seed 0) again, each a new invocation, for the ratio's spread
cd /work/wt-c
for i in 2 3; do
env PYTHONPATH=/work/wt-c /work/main/.venv/bin/python -m bench gym --trainers fast_sac,sb3_sac --tasks HalfCheetah-v5 --steps 20000 --seeds 0 --jobs 1 --progress-every 600 --out /work/s17/speed20k-$i || exit 1
done
