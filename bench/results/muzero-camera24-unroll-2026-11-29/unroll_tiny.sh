#!/bin/bash
# issue 52: muzero_repr with num_unroll_steps 3 on the tiny vector cases, seeds 0-2
cd /work/wt-run8
env PYTHONPATH=/work/wt-run8 /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --cases sac-line-discrete sac-line-continuous sac-square-discrete sac-square-continuous sac-hybrid-1c1d sac-hybrid-2c2d --seeds 0 1 2 --set num_unroll_steps=3 --out /work/s8/k3tiny.jsonl
