#!/bin/bash
# Issue 56: one-seed screens of critic levers on configs/gym's fast_sac (lr 1e-3, normalize, 2x256, tanh(mean)
# evaluation), STEPS env steps (default 30000) on TASK (default HalfCheetah-v5), seed SEED (default 0).
# `heavy --cores 1 -- lanes.sh NAME...`: each NAME a variant below, each its own records folder; after every run its
# runs.jsonl is copied here as <task>-s<SEED>-<STEPS/1000>k-<NAME>.jsonl. Rerunnable: --continue skips what a folder holds.
SEED=${SEED:-0}; STEPS=${STEPS:-30000}; TASK=${TASK:-HalfCheetah-v5}
TAG=$(echo ${TASK%-v*} | tr A-Z a-z)-s$SEED-$((STEPS/1000))k
PY=${PY:-/work/main/.venv/bin/python}
STUDY=${STUDY:-/work/main/bench/results/fast-sac-critic-screen-2026-12-02}
WT=${WT:-/work/main}; cd $WT; export PYTHONPATH=$WT
B="$PY -m bench gym --steps $STEPS --jobs 1 --continue --progress-every 600 --tasks $TASK --trainers fast_sac --seeds $SEED"
main() {
for name in "$@"; do
  case $name in
    config) set -- ;;
    utd2) set -- --set hyperparameters.steps_per_update=0.5 ;;
    wide512) set -- --set hyperparameters.critic_hidden_units=512 ;;
    beta05) set -- --set hyperparameters.adam_beta1=0.5 ;;
    delay2) set -- --set hyperparameters.actor_update_every=2 ;;
    nstep3) set -- --set hyperparameters.n_step=3 ;;
    tau02) set -- --set hyperparameters.tau=0.02 ;;
    wn) set -- --set hyperparameters.critic_weight_norm=true ;;
    wn-utd2) set -- --set hyperparameters.critic_weight_norm=true --set hyperparameters.steps_per_update=0.5 ;;
    *) echo "unknown variant $name"; exit 2 ;;
  esac
  OUT=/work/runs/screen-$TAG-$name; mkdir -p $OUT
  [ -f $OUT/runs.jsonl ] || { [ -f $STUDY/$TAG-$name.jsonl ] && cp $STUDY/$TAG-$name.jsonl $OUT/runs.jsonl; }
  $B "$@" --out $OUT; rc=$?
  [ -f $OUT/runs.jsonl ] && cp $OUT/runs.jsonl $STUDY/$TAG-$name.jsonl
  [ $rc = 0 ] || exit $rc
done
}
# (one line, parsed before it runs: editing this file while a lane runs cannot shift what bash reads next)
main "$@"; exit $?
