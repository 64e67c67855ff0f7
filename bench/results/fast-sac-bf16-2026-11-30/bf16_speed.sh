#!/bin/bash
# issue 55: one bench gym invocation, HalfCheetah-v5 20k seed 0: fast_sac (fp32), fast_sac_bf16, SB3 SAC
cd /work/wt-bf16 && PYTHONPATH=/work/wt-bf16 exec /work/main/.venv/bin/python -m bench gym --trainers fast_sac,fast_sac_bf16,sb3_sac --tasks HalfCheetah-v5 --steps 20000 --seeds 0 --jobs 1 --out /work/s14/bf16-speed20k
