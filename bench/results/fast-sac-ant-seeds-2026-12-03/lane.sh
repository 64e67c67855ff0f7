#!/bin/bash
# Ant-v5 seeds 1 and 2 at 100k: configs/gym fast_sac and SB3's SAC, one pinned core (`heavy --cores 1 -- lane.sh`),
# from a worktree of one commit; after every run the records are copied here (runs.jsonl) to be committed.
# Rerunnable: --continue skips what /work/runs/ant/runs.jsonl (seeded from runs.jsonl here) holds.
WT=${WT:-/work/wt-ant}
PY=${PY:-/work/main/.venv/bin/python}
STUDY=${STUDY:-/work/main/bench/results/fast-sac-ant-seeds-2026-12-03}
OUT=${OUT:-/work/runs/ant}
mkdir -p $OUT
[ -f $OUT/runs.jsonl ] || { [ -f $STUDY/runs.jsonl ] && cp $STUDY/runs.jsonl $OUT/runs.jsonl; }
cd $WT
for s in 1 2; do
  for t in fast_sac sb3_sac; do
    env PYTHONPATH=$WT $PY -m bench gym --steps 100000 --jobs 1 --continue --progress-every 600 --tasks Ant-v5 \
      --trainers $t --seeds $s --out $OUT
    rc=$?; cp $OUT/runs.jsonl $STUDY/runs.jsonl; [ $rc = 0 ] || exit $rc
  done
done
