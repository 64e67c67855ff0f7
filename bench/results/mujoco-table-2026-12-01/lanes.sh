#!/bin/bash
# The MuJoCo table again at one commit (cbc1d75 = c3fa027 plus the validation tasks: SAC's tanh(mean) deterministic
# action, configs/gym fast_sac at lr 1e-3 with normalize) and the validation tasks' first seed, on two cores, each lane
# its own records folder; after every run its runs.jsonl is copied to the study folder (lane-X.jsonl) to be committed.
# Rerunnable as is in a later session: --continue skips what a lane's runs.jsonl (seeded from lane-X.jsonl) holds.
#   lane a: fast_sac seeds 0,1,2 on HalfCheetah-v5 and Hopper-v5, then SB3 SAC seed 0 (the same-machine speed peer),
#           then seed 0 of the CrossQ preset and built-in sac;
#   lane b: validation seed 0 (Walker2d-v5, Ant-v5): configs/gym fast_sac, SB3 SAC, fast_sac before 111cb0a
#           (lr 3e-4, normalize off); then seed 0 of muzero_repr on the table;
#   lanes sac-HalfCheetah-v5, sac-Hopper-v5 (session 24, Intel Xeon family 6 model 207): built-in sac seed 0, one task
#           per lane so the two run side by side (returns only: the lane has no same-machine peer for speed).
LANE=$1
WT=${WT:-/work/wt}
PY=${PY:-/work/main/.venv/bin/python}
STUDY=${STUDY:-/work/main/bench/results/mujoco-table-2026-12-01}
OUT=/work/runs/lane-$LANE
mkdir -p $OUT
[ -f $OUT/runs.jsonl ] || { [ -f $STUDY/lane-$LANE.jsonl ] && cp $STUDY/lane-$LANE.jsonl $OUT/runs.jsonl; }
cd $WT
B="env PYTHONPATH=$WT $PY -m bench gym --steps 100000 --jobs 1 --continue --progress-every 600"
T="$B --tasks HalfCheetah-v5,Hopper-v5"
V="$B --tasks validation"
run() { "$@" --out $OUT; rc=$?; cp $OUT/runs.jsonl $STUDY/lane-$LANE.jsonl; return $rc; }
if [ "${LANE%%-*}" = sac ]; then
  run $B --tasks ${LANE#sac-} --trainers sac --seeds 0
elif [ "$LANE" = a ]; then
  for s in 0 1 2; do run $T --trainers fast_sac --seeds $s || exit 1; done
  run $T --trainers sb3_sac --seeds 0 || exit 1
  for t in fast_sac_crossq sac; do run $T --trainers $t --seeds 0 || exit 1; done
else
  run $V --trainers fast_sac --seeds 0 || exit 1
  run $V --trainers sb3_sac --seeds 0 || exit 1
  OUT=/work/runs/lane-b-old; LANE=b-old; mkdir -p $OUT
  [ -f $OUT/runs.jsonl ] || { [ -f $STUDY/lane-$LANE.jsonl ] && cp $STUDY/lane-$LANE.jsonl $OUT/runs.jsonl; }
  run $V --trainers fast_sac --seeds 0 --set hyperparameters.learning_rate=0.0003 --set network_settings.normalize=false || exit 1
  OUT=/work/runs/lane-b2; LANE=b2; mkdir -p $OUT
  [ -f $OUT/runs.jsonl ] || { [ -f $STUDY/lane-$LANE.jsonl ] && cp $STUDY/lane-$LANE.jsonl $OUT/runs.jsonl; }
  run $T --trainers muzero_repr --seeds 0
fi
