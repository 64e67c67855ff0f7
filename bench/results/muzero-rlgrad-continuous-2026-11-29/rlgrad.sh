#!/bin/bash
# #52: rl_gradient_to_repr on vector observations with continuous/hybrid actions: the validation scenes it would
# change (screen budgets, seed 0, minimal config), muzero_repr default vs true; then reach_continuous seeds 3-5.
cd /work/main; source .venv/bin/activate
OUT=/work/s7/rlgrad.jsonl
for sc in "hybrid_sparse 20000" "reach_continuous_noisy 15000" "balance_distractors 12000" "balance_big_reward_long 15000" "switching_noisy 12000"; do
  set -- $sc
  python -m bench holding --scene $1 --config minimal --trainers muzero_repr --seeds 0 --steps $2 --areas 1 --json $OUT
  python -m bench holding --scene $1 --config minimal --trainers muzero_repr --seeds 0 --steps $2 --areas 1 --set rl_gradient_to_repr=true --json $OUT
done
for s in 3 4 5; do
  python -m bench holding --scene reach_continuous --config minimal --trainers fast_sac muzero_repr --seeds $s --steps 24000 --areas 1 --json /work/s7/reach_min.jsonl
  python -m bench holding --scene reach_continuous --config minimal --trainers muzero_repr --seeds $s --steps 24000 --areas 1 --set rl_gradient_to_repr=true --json /work/s7/reach_min.jsonl
done
