#!/bin/bash
# The exchange screens of this study (one `heavy --cores 1` job each): gRPC environment variables, then ML-Agents'
# sync gRPC server against a grpc.aio prototype (aio_proto.py), three alternations.  BUILD: a HalfCheetah-v5 stand-in
# written by `python -m bench gym` (its builds/ folder).  Output: one JSON line per process (exchange_cpu.py).
B=${BUILD:?set BUILD to a bench gym stand-in build, e.g. <out>/builds/HalfCheetah.x86_64}
cd "$(git rev-parse --show-toplevel)"
here=bench/results/fast-sac-auto-products-2026-12-03
run() { env "$@" PORT=$((5100 + RANDOM % 800)) .venv/bin/python $here/exchange_cpu.py $B 3000 2>/dev/null | grep '^{'; }
for rep in 1 2; do
  run X=1
  run GRPC_POLL_STRATEGY=poll
  run GRPC_EXPERIMENTS=-event_engine_listener,-event_engine_for_all_other_endpoints,-event_engine_callback_cq,-event_engine_client,-event_engine_poller
  run GRPC_EXPERIMENTS=-event_engine_callback_cq
  run GRPC_EXPERIMENTS=-event_engine_listener
done
for rep in 1 2 3; do
  for aio in 0 1; do
    extra=""; [ $aio = 1 ] && extra="MLAGENTS_PLUGINS_BIND_ALL=1"  # the prototype binds localhost itself
    env $extra AIO=$aio PORT=$((5100 + RANDOM % 800)) .venv/bin/python $here/aio_proto.py $here/exchange_cpu.py $B 3000 \
      2>/dev/null | grep '^{' | sed "s/^{/{\"aio\": $aio, /"
  done
done
