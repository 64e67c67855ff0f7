#!/bin/bash
# issue 52: the discrete line's failure rate at the defaults and with a model update every 3rd SAC update, seeds 3-9
cd /work/wt-run8
T="env PYTHONPATH=/work/wt-run8 /work/main/.venv/bin/python -m mlagents_plugins.envs.tiny --trainers muzero_repr --cases sac-line-discrete sac-line-continuous --seeds 3 4 5 6 7 8 9"
$T --out /work/s8/ld39.jsonl
$T --set model_update_interval=3 --out /work/s8/ld39.jsonl
