#!/bin/bash
# issue 52: same-run profile of fast_sac and muzero_repr on balance_distractors at 8 agents, 2 rounds, 6k steps, with
# the given muzero_repr overrides.  Usage: profile.sh CHECKOUT OUT_DIR [SETTING...]   (one heavy --cores 1 job)
W=$1; OUT=$2; shift 2
SET=""; [ $# -gt 0 ] && SET="--set $*"
cd "$W"
PYTHONPATH=$W /work/main/.venv/bin/python -m bench profile --scene balance_distractors --trainers fast_sac muzero_repr --agents 8 --rounds 2 --steps 6000 $SET --out $OUT
