#!/bin/bash
# perf over fast_sac's warm update in a loop (update_loop.py, bf16 at 2x256, batch 256, one thread), from the
# repository root: bash bench/results/fast-sac-startup-2026-12-03/perf_update.sh [updates] [seconds]
HERE=bench/results/fast-sac-startup-2026-12-03
rm -f /tmp/loop_start
.venv/bin/python $HERE/update_loop.py ${1:-1500} &
P=$!
while [ ! -f /tmp/loop_start ]; do sleep 0.05; done
perf record -F 2999 -p $P -o /tmp/update_perf.data -- sleep ${2:-8} 2>&1 | tail -1
wait $P
perf report -i /tmp/update_perf.data --sort dso,symbol --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" > /tmp/update_perf_syms.txt
python3 $HERE/perf_categories.py /tmp/update_perf_syms.txt
