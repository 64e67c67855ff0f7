#!/bin/bash
# issue 55: one invocation, HalfCheetah-v5 20k seed 0: fast_sac (default: auto, bf16 here), fast_sac_fp32, SB3 SAC
cd /work/wt-c1
PYTHONPATH=/work/wt-c1 /work/main/.venv/bin/python -m bench gym --trainers fast_sac,fast_sac_fp32,sb3_sac --tasks HalfCheetah-v5 --steps 20000 --seeds 0 --jobs 1 --out /work/s15/speed20k
