#!/bin/bash
# issue 52: latent sized by the config (16 for the tiny 1x16 configs) on the tiny lines, seeds 0-9
cd /work/wt-run8
env PYTHONPATH=/work/wt-run8 /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --cases sac-line-discrete sac-line-continuous --seeds 0 1 2 3 4 5 6 7 8 9 --set latent_size=16 --out /work/s8/lat16.jsonl
