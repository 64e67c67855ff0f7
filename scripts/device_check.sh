#!/usr/bin/env bash
# GPU check for a lent CUDA machine (a bare image with torch, no network): installs mlagents 1.1.0 and this
# package from wheels carried in .whl/ (see docs/gpu.md), then runs tests/test_cuda.py: every trainer through
# mlagents-learn --torch-device cuda with threaded: true, then --resume.  Logs go to $OUT when it is set.
# --setup-only: install and stop (for other device commands, e.g. bench/learn_speed.py --torch-device cuda).
# TESTS="..." replaces the test selection; with MLAGENTS_PLUGINS_TEST_DEVICE=cuda in the environment the in-process
# tests it names (learning thresholds, reward signals, replay persistence) build their trainers on the GPU too
# (tests/conftest.py).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/device-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch, numpy, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), "numpy", numpy.__version__)'
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python .whl/*.whl || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir . || exit 1
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  ls "$site"/mlagents_plugins_boot.pth
  python3 -c 'import google.protobuf, mlagents.trainers, mlagents_plugins; print("protobuf", google.protobuf.__version__)'
} 2>&1 | tee "$out/setup.log"
[ "${PIPESTATUS[0]}" = 0 ] || { echo "device check: set-up failed" >&2; exit 1; }
[ "${1:-}" = "--setup-only" ] && exit 0
# shellcheck disable=SC2086
python3 -m pytest -q -p xdist -n "${JOBS:-8}" ${TESTS:-tests/test_cuda.py tests/test_torch_device.py} --durations=0 -rA \
  --junitxml="$out/junit.xml" "$@" 2>&1 | tee "$out/pytest.log"
