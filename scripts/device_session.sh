#!/usr/bin/env bash
# One device call (2026-11-28 session): install (device_check.sh --setup-only), then side by side
#  1. the GPU checks: tests/test_cuda.py's option cases (memory, CrossQ's critic, muzero_repr's target h) and the
#     four balance cases, then the in-process recurrent tests and the memory tiny cases with a GPU learner;
#  2. tiny-case grids on the CPU cores the checks leave (bench/results/tiny-grid-2026-11-28/grid.py): issue 53's
#     candidates from the start, issue 56's CrossQ recipe once the subprocess checks are done.
# Everything is time-boxed by LIMIT seconds; results go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-470}
export PYTHONUNBUFFERED=1
start=$(date +%s)
OUT=${OUT:-results/device-session}; mkdir -p "$OUT"; export OUT
bash scripts/device_check.sh --setup-only || exit 1
python3 -c 'import os; print("cores", len(os.sched_getaffinity(0)))'
left() { echo $(( LIMIT - ($(date +%s) - start) )); }
grid() {  # grid OUTFILE JOBS GROUP...
  CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 timeout "$(left)" python3 bench/results/tiny-grid-2026-11-28/grid.py "$@" \
    >> "$OUT/tiny.log" 2>&1
}
grid "$OUT/tiny53.jsonl" "${GRID53_JOBS:-5}" ent0 ent0-neutral switch1 &
g53=$!
timeout "$(left)" python3 -m pytest -p xdist -n "${JOBS:-10}" -vv -rA --durations=0 tests/test_cuda.py \
  -k "options or (threaded_run and balance)" -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "cuda tests rc $? at $(( $(date +%s) - start )) s"
grid "$OUT/tinycq.jsonl" "${GRIDCQ_JOBS:-6}" crossq &
gcq=$!
MLAGENTS_PLUGINS_TEST_DEVICE=cuda timeout "$(left)" python3 -m pytest -p xdist -n 4 -vv -rA --durations=0 \
  tests/fast_sac/test_recurrent.py tests/impala/test_recurrent.py tests/test_tiny_learning.py \
  -k "test_recurrent or (test_learns and memory and (fast_sac or impala) and 0])" -p no:cacheprovider \
  > "$OUT/recurrent.log" 2>&1
echo "recurrent tests rc $? at $(( $(date +%s) - start )) s"
wait $g53 $gcq
for f in "$OUT"/tiny*.jsonl; do echo "$f: $(wc -l < "$f") runs"; done
echo "done at $(( $(date +%s) - start )) s"
tail -4 "$OUT/pytest.log" "$OUT/recurrent.log"
