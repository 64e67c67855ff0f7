#!/bin/bash
# issue 52 cost cut: shorter unroll (num_unroll_steps 3) and model every 3rd update, learning on reach_continuous 24k seeds 0-2, then same-run profiles
cd /work/wt-run8; export PYTHONPATH=/work/wt-run8
P=/work/main/.venv/bin/python
for s in 0 1 2; do
  $P -m bench holding --scene reach_continuous --config minimal --trainers muzero_repr --seeds $s --steps 24000 --areas 1 --set num_unroll_steps=3 --json /work/s8/k3.jsonl
done
$P -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 --set num_unroll_steps=3 --out /work/s8/profile-k3 --note "issue 52: muzero_repr num_unroll_steps 3 (fast_sac unaffected)"
for s in 0 1 2; do
  $P -m bench holding --scene reach_continuous --config minimal --trainers muzero_repr --seeds $s --steps 24000 --areas 1 --set model_update_interval=3 --json /work/s8/k3.jsonl
done
$P -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 --set model_update_interval=3 --out /work/s8/profile-i3 --note "issue 52: muzero_repr model_update_interval 3 (fast_sac unaffected)"
