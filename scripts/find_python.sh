#!/usr/bin/env bash
# Prints the interpreter to use for PYTHON=$1: $1 itself when it runs; otherwise, for a name like
# python3.13 that a pyenv shim answers only when that version is selected, pyenv's own copy of it
# ($PYENV_ROOT/versions/3.13*/bin/python3.13, the newest); otherwise $1 unchanged (setup then says what is wrong).
name=${1:-python3}
if "$name" -c '' 2>/dev/null; then
  echo "$name"
  exit 0
fi
if [[ "$name" =~ ^python(3\.[0-9]+)$ ]]; then
  found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${BASH_REMATCH[1]}".*/bin/"$name" 2>/dev/null | sort -V | tail -1)
  if [ -n "$found" ] && "$found" -c '' 2>/dev/null; then
    echo "$found"
    exit 0
  fi
fi
echo "$name"
