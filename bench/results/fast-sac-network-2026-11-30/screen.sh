#!/bin/bash
# issue 56: fast_sac's validation screen with the network's nulls resolved to RELU / INIT (a checkout whose
# FastSACSettings.network_recipe() returns them: "before" = swish/mlagents, today's code). $1 = checkout, $2 = output folder, rest: extra options
wt=$1; out=$2; shift 2
cd $wt && PYTHONPATH=$wt python -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --out $out "$@"
