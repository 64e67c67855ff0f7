#!/bin/bash
cd /work/wt-e; export PYTHONPATH=/work/wt-e
/work/main/.venv/bin/python -m bench profile --trainers fast_sac muzero_repr --agents 8 --rounds 1 --steps 6000 --stacks 25 --out /work/s7/profile-after --note "branch s7: muzero_repr's rl_gradient_to_repr automatic = on (vector + continuous)"
