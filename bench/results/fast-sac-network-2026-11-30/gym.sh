#!/bin/bash
# issue 56: fast_sac on a MuJoCo task to 100k steps with the SAC paper's network; $1 = task, $2 = seed, $3 = output folder.
# The probe runs (seeds 0-1 of Hopper-v5, seed 0 of HalfCheetah-v5) set PROBE_NET=relu,torchinit on main ebe08cd with
# probe.diff applied instead of the two --set options (the same networks: equivalence run in the report).
python -m bench gym --trainers fast_sac --tasks $1 --steps 100000 --seeds $2 --jobs 1 --out $3 \
  --set hyperparameters.network_activation=relu --set hyperparameters.network_init=torch
