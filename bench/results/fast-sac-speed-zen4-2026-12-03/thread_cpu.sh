#!/bin/bash
# per-thread CPU of the trainer process over a 5 s window mid-run (ticks of 10 ms: tid, name, before, after)
# run from the repository root with its .venv: bash bench/results/fast-sac-speed-zen4-2026-12-03/thread_cpu.sh OUT.jsonl
.venv/bin/python -m bench gym-split --agents 1 --steps 8000 --buffer-init-steps 8000 --stacks 1 --note threads --out "$1" > "$1.log" 2>&1 &
sleep 12
ps -eo pid,args | grep -v grep | grep -E "profiling.child|mlagents-learn|HalfCheetah" | cut -c1-150
for pid in $(pgrep -f "profiling.child"); do
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm | tr ' ' _) $(awk '{print $14+$15}' $t/stat)"; done > /tmp/a.$pid
  sleep 5
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm | tr ' ' _) $(awk '{print $14+$15}' $t/stat)"; done > /tmp/b.$pid
  join <(sort /tmp/a.$pid) <(sort /tmp/b.$pid) | awk "{print \$1, \$2, \$3, \$5}"
done
wait
