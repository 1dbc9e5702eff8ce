#!/usr/bin/env bash
# Regenerates every fixture in tests/fixtures/ with Debian's PyTorch 1.13
# (apt-get install python3-torch). A development tool only: building and
# testing read the committed fixtures and never need Python.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3   # Debian's interpreter, where python3-torch lives
for script in [0-9a-z]*.py; do
  [ "$script" = fixtures.py ] && continue
  echo "== $script"
  "$PY" "$script"
done
