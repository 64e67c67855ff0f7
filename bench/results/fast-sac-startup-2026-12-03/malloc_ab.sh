#!/bin/bash
# fast_sac's update (2x256, batch 256, bf16), ms per update by glibc malloc tunables; alternating processes
cd "${REPO:-.}"
for r in 1 2 3; do
for v in "" "glibc.malloc.mxfast=0" "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864" "glibc.malloc.mxfast=0:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864"; do
  out=$(GLIBC_TUNABLES=$v .venv/bin/python bench/results/fast-sac-startup-2026-12-03/update_loop.py 1000 2>/dev/null | grep "update CPU")
  echo "round $r [$v] $out"
done; done
