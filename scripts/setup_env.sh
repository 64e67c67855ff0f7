#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment and installs mlagents 1.1.0, torch and this
# package into it.  Idempotent: a second run with nothing changed takes about a second.
#
#   VENV=.venv PYTHON=python3 scripts/setup_env.sh [test] [bench]
#
# Python <= 3.10.12: mlagents installs the normal way (pip resolves its own pins).
# Newer Python: mlagents' metadata refuses the interpreter and pins grpcio<=1.48.2 (no wheel), so
# mlagents / mlagents-envs go in with --no-deps --ignore-requires-python, followed by the dependency
# set in requirements/host-py311.txt.  An already-installed torch (e.g. a user's CUDA build) is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
extras=("$@")

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check -q)

# Stamp: skip everything when inputs are unchanged since the last successful setup.
stamp="$VENV/.mlagents-plugins-setup"
want=$(cat setup.py requirements/*.txt scripts/setup_env.sh | cksum | cut -d' ' -f1)-"${extras[*]:-}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import mlagents_plugins, mlagents.trainers, torch" 2>/dev/null; then
  exit 0
fi

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[setup] installing torch"
  "${PIP[@]}" torch==2.13.0 2>/dev/null || "${PIP[@]}" torch
fi

legacy=$("$PY" -c 'import sys; print(int(sys.version_info[:3] <= (3, 10, 12)))')
if [ "$legacy" = 1 ]; then
  echo "[setup] installing mlagents 1.1.0 with its own dependency pins"
  "${PIP[@]}" -e .
else
  echo "[setup] installing mlagents 1.1.0 (--no-deps) and a dependency set that works on $("$PY" --version)"
  "${PIP[@]}" --no-deps --ignore-requires-python mlagents==1.1.0 mlagents-envs==1.1.0
  "${PIP[@]}" -r requirements/host-py311.txt
  "${PIP[@]}" --no-deps -e .
fi
for e in "${extras[@]}"; do
  # Constrained by the host set so that e.g. onnxruntime cannot drag protobuf past 3.20.
  "${PIP[@]}" -r "requirements/$e.txt" -c requirements/host-py311.txt
done
"$PY" -c "import mlagents.trainers.learn, mlagents_plugins" >/dev/null
echo "$want" > "$stamp"
echo "[setup] environment ready: $VENV"
