#!/bin/bash
# issue 57: the MuJoCo table's invocation at one commit (0d0d312), continued across sessions with --continue:
# seed 0 of fast_sac, SB3 SAC and the CrossQ preset on both tasks, then seeds 1 and 2, then built-in sac and taac,
# then muzero_repr (about 2.4 h a run).  Records: OUT/runs.jsonl (copied into bench/results/ as they arrive).
cd /work/wt-mj
OUT=/work/s15/mujoco-table
G="env PYTHONPATH=/work/wt-mj /work/main/.venv/bin/python -m bench gym --tasks HalfCheetah-v5,Hopper-v5 --steps 100000 --jobs 1 --continue --progress-every 600 --out $OUT"
for s in 0 1 2; do $G --trainers fast_sac,sb3_sac,fast_sac_crossq --seeds $s || exit 1; done
$G --trainers sac,taac --seeds 0 || exit 1
$G --trainers muzero_repr --seeds 0
