#!/bin/bash
# #52: reach_continuous_noisy (validation), screen budget 15k, seeds 1-2: muzero_repr default vs rl_gradient_to_repr=true, fast_sac beside
cd /work/main; source .venv/bin/activate
for s in 1 2; do
  python -m bench holding --scene reach_continuous_noisy --config minimal --trainers muzero_repr fast_sac --seeds $s --steps 15000 --areas 1 --json /work/s7/rlgrad.jsonl
  python -m bench holding --scene reach_continuous_noisy --config minimal --trainers muzero_repr --seeds $s --steps 15000 --areas 1 --set rl_gradient_to_repr=true --json /work/s7/rlgrad.jsonl
done
