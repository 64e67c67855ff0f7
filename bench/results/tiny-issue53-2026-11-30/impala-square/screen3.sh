#!/bin/bash
# issue 53: ppo-square-continuous with ML-Agents' own 2D ppo test settings (test_2d_ppo: batch_size 64, buffer_size 640,
# max_steps 10000), built-in ppo and impala, seeds 0-19 (main; the case's own step 0.5 kept)
cd /work/main
PY="env PYTHONPATH=/work/main /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny"
$PY --trainers ppo impala --cases ppo-square-continuous --seeds $(seq 0 19) --jobs 1 --set batch_size=64 buffer_size=640 --max-steps 10000 --out /work/s14/square/screen_2dppo.jsonl
