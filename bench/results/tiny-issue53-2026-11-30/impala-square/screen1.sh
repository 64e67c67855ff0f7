#!/bin/bash
# issue 53: impala ppo-square-continuous, surrogate_ratio per_action (seeds 0-19) vs joint (seeds 10-19; 0-9 in the study)
cd /work/wt-imp
PY="env PYTHONPATH=/work/wt-imp /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny"
$PY --trainers impala --cases ppo-square-continuous --seeds $(seq 0 19) --jobs 1 --set surrogate_ratio='"per_action"' --out /work/s12/imp/screen1.jsonl
$PY --trainers impala --cases ppo-square-continuous --seeds $(seq 10 19) --jobs 1 --out /work/s12/imp/screen1.jsonl
