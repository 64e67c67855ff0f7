#!/bin/bash
# #52: reach_continuous (vector), the defaults benchmark's drop-in config (--config minimal), 24k steps, seeds 0-2:
# fast_sac, muzero_repr (defaults), muzero_repr rl_gradient_to_repr=true
cd /work/main; source .venv/bin/activate
for s in 0 1 2; do
  python -m bench holding --scene reach_continuous --config minimal --trainers fast_sac muzero_repr --seeds $s --steps 24000 --areas 1 --json /work/s7/reach_min.jsonl
  python -m bench holding --scene reach_continuous --config minimal --trainers muzero_repr --seeds $s --steps 24000 --areas 1 --set rl_gradient_to_repr=true --json /work/s7/reach_min.jsonl
done
