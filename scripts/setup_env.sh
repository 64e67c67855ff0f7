#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment and installs mlagents 1.1.0, torch and this
# package into it.  Idempotent: a second run with nothing changed takes about a second.
#
#   VENV=.venv PYTHON=python3 scripts/setup_env.sh [test] [bench]
#
# Supported: Python 3.10 to 3.13; the dependency set is picked by the interpreter's version
# (requirements/README.md has the table):
#   3.10.1-3.10.12  mlagents installs the normal way (pip resolves its own pins: protobuf 3.20, numpy 1.23).
#   3.10.13+, 3.11  mlagents' metadata refuses the interpreter and pins grpcio<=1.48.2 (no wheel), so mlagents /
#                   mlagents-envs go in with --no-deps --ignore-requires-python, then requirements/host-py310-py311.txt.
#   3.12, 3.13      the same, with the current releases in requirements/host-py312-py313.txt (protobuf 4-6 and
#                   numpy 2, made to work by mlagents_plugins_boot).
# An already-installed torch (e.g. a user's CUDA build) is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
extras=("$@")
SUPPORTED="Python 3.10 to 3.13"

if ! version=$("$PYTHON" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null); then
  echo "[setup] cannot run PYTHON=$PYTHON; mlagents-plugins supports $SUPPORTED (e.g. make test PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
IFS=. read -r major minor micro <<<"$version"
if [ "$major" = 3 ] && [ "$minor" = 10 ] && [ "$micro" -le 12 ]; then
  dependency_set=mlagents-pins
elif [ "$major" = 3 ] && { [ "$minor" = 10 ] || [ "$minor" = 11 ]; }; then
  dependency_set=requirements/host-py310-py311.txt
elif [ "$major" = 3 ] && { [ "$minor" = 12 ] || [ "$minor" = 13 ]; }; then
  dependency_set=requirements/host-py312-py313.txt
else
  echo "[setup] Python $version is not supported: mlagents-plugins supports $SUPPORTED (set PYTHON=... to one of those)" >&2
  exit 1
fi

if [ -x "$VENV/bin/python" ]; then
  have=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$have" != "$major.$minor" ]; then
    echo "[setup] $VENV holds Python $have, not $major.$minor ($PYTHON): remove it or choose another VENV=" >&2
    exit 1
  fi
else
  echo "[setup] creating virtual environment $VENV with Python $version"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check -q)

# Stamp: skip everything when inputs are unchanged since the last successful setup.
stamp="$VENV/.mlagents-plugins-setup"
want=$(cat setup.py requirements/*.txt scripts/setup_env.sh mlagents_plugins_boot.pth | cksum | cut -d' ' -f1)-"${extras[*]:-}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$PY" -c "import mlagents_plugins, mlagents.trainers, torch" 2>/dev/null; then
  exit 0
fi

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[setup] installing torch"
  "${PIP[@]}" torch==2.13.0 2>/dev/null || "${PIP[@]}" torch
fi

if [ "$dependency_set" = mlagents-pins ]; then
  echo "[setup] installing mlagents 1.1.0 with its own dependency pins"
  "${PIP[@]}" -e .
  constraints=()
else
  echo "[setup] installing mlagents 1.1.0 (--no-deps) and $dependency_set for Python $version"
  "${PIP[@]}" --no-deps --ignore-requires-python mlagents==1.1.0 mlagents-envs==1.1.0
  "${PIP[@]}" -r "$dependency_set"
  "${PIP[@]}" --no-deps -e .
  constraints=(-c "$dependency_set")
fi
# The start-up hook (mlagents_plugins_boot.pth) is a data file of the package; a wheel puts it in site-packages,
# an editable install (ours) leaves it out, so it is copied there.
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cmp -s mlagents_plugins_boot.pth "$site/mlagents_plugins_boot.pth" || cp mlagents_plugins_boot.pth "$site/"
for e in "${extras[@]}"; do
  # Constrained by the chosen set so that e.g. onnxruntime cannot move protobuf or numpy.
  "${PIP[@]}" -r "requirements/$e.txt" "${constraints[@]}"
done
"$PY" -c "import mlagents.trainers.learn, mlagents_plugins" >/dev/null
echo "$want" > "$stamp"
echo "[setup] environment ready: $VENV ($("$PY" -c 'import google.protobuf as p, numpy as n, grpc as g; print("protobuf", p.__version__, "numpy", n.__version__, "grpcio", g.__version__)'))"
