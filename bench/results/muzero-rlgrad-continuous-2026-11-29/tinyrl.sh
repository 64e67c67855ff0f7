#!/bin/bash
# #52: muzero_repr's tiny cases the automatic rl_gradient_to_repr (true with vector + continuous/hybrid) would change, seeds 0-2
cd /work/main; source .venv/bin/activate
python -m mlagents_plugins.envs.tiny --trainers muzero_repr --cases sac-square-continuous sac-hybrid-2c2d sac-hybrid-1c1d --seeds 0 1 2 --jobs 1 --set rl_gradient_to_repr=true --out /work/s7/tinyrl.jsonl
