#!/bin/bash
# issue 53: built-in ppo seeds 10-19 on ppo-square-continuous; impala with Adam's epsilon 1e-8 (ppo's), and with every
# optimizer-side guard as ppo (eps 1e-8, kl_stop null, grad_clip_norm null), seeds 0-19
cd /work/wt-run
PY="env PYTHONPATH=/work/wt-run /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny"
OUT=/work/s12/imp/screen2.jsonl
$PY --trainers ppo --cases ppo-square-continuous --seeds $(seq 10 19) --jobs 1 --out $OUT
$PY --trainers impala --cases ppo-square-continuous --seeds $(seq 0 19) --jobs 1 --set optimizer_epsilon=1e-8 --out $OUT
$PY --trainers impala --cases ppo-square-continuous --seeds $(seq 0 19) --jobs 1 --set optimizer_epsilon=1e-8 kl_stop=null grad_clip_norm=null --out $OUT
