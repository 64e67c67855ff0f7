#!/bin/bash
cd /work/wt-run8 && PYTHONPATH=/work/wt-run8 /work/main/.venv/bin/python -m bench holding --scene reach_continuous_camera24 --config minimal --trainers fast_sac muzero_repr --seeds 0 1 2 --steps 24000 --areas 1 --json /work/s8/cam24.jsonl
