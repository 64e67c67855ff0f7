#!/bin/bash
# issue 57: the MuJoCo table's invocation at one commit (0734283), continued across sessions with --continue:
# fast_sac and SB3 SAC seeds 0,1,2 on both tasks, then built-in sac, taac and the CrossQ preset (seed 0), then
# muzero_repr (seed 0, about 80 min a run on an AVX2 EPYC).  Records: OUT/runs.jsonl (copied into bench/results/ as they arrive).
WT=${WT:-/work/wt-mj2}
OUT=${OUT:-/work/s16/mujoco-table}
cd $WT
G="env PYTHONPATH=$WT /work/main/.venv/bin/python -m bench gym --tasks HalfCheetah-v5,Hopper-v5 --steps 100000 --jobs 1 --continue --progress-every 600 --out $OUT"
for s in 0 1 2; do $G --trainers fast_sac,sb3_sac --seeds $s || exit 1; done
$G --trainers sac,taac,fast_sac_crossq --seeds 0 || exit 1
$G --trainers muzero_repr --seeds 0
