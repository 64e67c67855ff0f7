#!/bin/bash
# Dynamo's experimental caching precompile against the whole step (one `heavy --cores 1` job): a fresh Inductor cache,
# then four processes of precompile_try.py; one JSON line each (precompile.jsonl, the case added by hand).
cd "$(git rev-parse --show-toplevel)"
export TORCHINDUCTOR_CACHE_DIR=/tmp/precompile_try_cache
rm -rf $TORCHINDUCTOR_CACHE_DIR
S=bench/results/fast-sac-auto-products-2026-12-03/precompile_try.py
TORCH_CACHING_PRECOMPILE=1 SAVE=1 .venv/bin/python $S 2>&1 | grep '^{'
TORCH_CACHING_PRECOMPILE=1 .venv/bin/python $S 2>&1 | grep '^{'
.venv/bin/python $S 2>&1 | grep '^{'
TORCH_CACHING_PRECOMPILE=1 .venv/bin/python $S 2>&1 | grep '^{'
