#!/bin/bash
# issue 55: return at 100k with bf16 products, 3 seeds, both tuning tasks (resumable)
cd /work/wt-bf16 && PYTHONPATH=/work/wt-bf16 exec /work/main/.venv/bin/python -m bench gym --trainers fast_sac_bf16 --tasks HalfCheetah-v5,Hopper-v5 --steps 100000 --seeds 0,1,2 --jobs 1 --continue --out /work/s14/bf16-100k
