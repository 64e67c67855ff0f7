#!/bin/bash
# Issue 56: fast_sac's two deviations from the paper on continuous actions, one at a time, on HalfCheetah-v5 at 100k
# with configs/gym's fast_sac (lr 1e-3, normalize) and tanh(mean) evaluation: the config as is, n_step 1 (standard
# one-step targets; default 2), critic_layer_norm false (the paper's plain critics; default on at 256 units).
# One lane per seed (`heavy --cores 1 -- lanes.sh SEED [CONFIG ...]`, all three configs unless named), each config its
# own records folder; after every run its runs.jsonl is copied here as s<SEED>-<config>.jsonl (HalfCheetah-v5) or
# <task>-s<SEED>-<config>.jsonl (TASK=Hopper-v5 ...), prefixed <LABEL>- with LABEL set. Rerunnable: --continue skips what a folder holds.
SEED=$1; shift
WANT=${*:-config nolayernorm nstep1}
TASK=${TASK:-HalfCheetah-v5}
case $TASK in HalfCheetah-v5) PFX= ;; *) PFX=$(echo ${TASK%-v*} | tr A-Z a-z)- ;; esac
PFX=${LABEL:+$LABEL-}$PFX  # LABEL=zen5: a seed again on another machine, beside the first machine's records
PY=${PY:-/work/main/.venv/bin/python}
STUDY=${STUDY:-/work/main/bench/results/fast-sac-hc-deviations-2026-12-02}
cd /work/main
B="$PY -m bench gym --steps 100000 --jobs 1 --continue --progress-every 600 --tasks $TASK --trainers fast_sac --seeds $SEED"
run() {
  name=$1; shift
  case " $WANT " in *" $name "*) ;; *) return 0 ;; esac
  OUT=/work/runs/dev-${PFX}s$SEED-$name; mkdir -p $OUT
  [ -f $OUT/runs.jsonl ] || { [ -f $STUDY/${PFX}s$SEED-$name.jsonl ] && cp $STUDY/${PFX}s$SEED-$name.jsonl $OUT/runs.jsonl; }
  $B "$@" --out $OUT; rc=$?
  [ -f $OUT/runs.jsonl ] && cp $OUT/runs.jsonl $STUDY/${PFX}s$SEED-$name.jsonl
  return $rc
}
run config || exit 1
run nolayernorm --set hyperparameters.critic_layer_norm=false || exit 1
run nstep1 --set hyperparameters.n_step=1
