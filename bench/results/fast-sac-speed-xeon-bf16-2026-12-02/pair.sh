#!/bin/bash
# Issue 55's check on an Intel Xeon (family 6, model 207; avx512_bf16, AMX hidden), where update_precision auto is bf16: one
# invocation, HalfCheetah-v5, 20k steps, seed 0, fast_sac and SB3 SAC, one at a time on one pinned core
# (`heavy --cores 1 -- pair.sh N`), the other core busy with another learning run. Its runs.jsonl is copied here as
# runs-N.jsonl (N: the invocation's number in this study). TRAINERS=fast_sac,fast_sac_fp32,sb3_sac adds the fp32 update
# (configs/gym/fast_sac_fp32_*.yaml) beside auto's bf16.
N=${1:?usage: pair.sh N}
TRAINERS=${TRAINERS:-fast_sac,sb3_sac}
PY=${PY:-/work/main/.venv/bin/python}
STUDY=${STUDY:-/work/main/bench/results/fast-sac-speed-xeon-bf16-2026-12-02}
OUT=/work/runs/pair-amx-$N; mkdir -p $OUT
cd /work/main
$PY -m bench gym --trainers $TRAINERS --tasks HalfCheetah-v5 --steps 20000 --seeds 0 --jobs 1 --continue --progress-every 0 --out $OUT
rc=$?; [ -f $OUT/runs.jsonl ] && cp $OUT/runs.jsonl $STUDY/runs-$N.jsonl; exit $rc
