#!/bin/bash
# gym-split 12k runs of fast_sac (HalfCheetah-v5, one agent), 291181e (before this study) and HEAD alternating
out=/work/main/bench/results/fast-sac-startup-2026-12-03/split_ab.jsonl
for r in 1 2 3; do
  for tree in /work/wt-old /work/main; do
    c=$(git -C $tree rev-parse --short=7 HEAD)
    (cd $tree && /work/main/.venv/bin/python -m bench gym-split --trainer fast_sac --agents 1 --steps 12000 \
      --buffer-init-steps 5000 --note "$c round $r" --out $out > /dev/null 2>&1)
  done
done
