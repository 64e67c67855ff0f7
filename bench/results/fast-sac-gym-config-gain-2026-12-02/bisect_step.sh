#!/usr/bin/env bash
# git bisect run step: 0 when fast_sac's balance_big_reward_long seed 0 screen run ends as at c50405b (252.384), 1 otherwise
cd /work/wt-bisect || exit 125
out=/tmp/bisect-$(git rev-parse --short HEAD)
rm -rf "$out"
PYTHONPATH="$PWD" /work/main/.venv/bin/python -m bench defaults --screen --trainers fast_sac --seeds 1 --jobs 1 \
  --scenes balance_big_reward_long --out "$out" > "$out.log" 2>&1 || exit 125
final=$(python3 -c "import json; print([json.loads(l)['final_mean_reward'] for l in open('$out/runs.jsonl')][0])")
echo "$(git rev-parse --short HEAD) final $final" >> /work/runs/bisect.txt
python3 -c "import sys; sys.exit(0 if abs($final - 252.3844788869222) < 1e-3 else 1)"
