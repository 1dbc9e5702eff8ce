#!/usr/bin/env bash
# Regenerates every fixture in tests/fixtures/ with Debian's PyTorch 1.13
# (apt-get install python3-torch). A development tool only: building and
# testing read the committed fixtures and never need Python.
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3   # Debian's interpreter, where python3-torch lives
# The committed fixtures were made on the reference BLAS (libblas3). With
# OpenBLAS installed the products round differently in the last bits, so a
# regeneration would rewrite every value for nothing: pin the reference.
REFERENCE_BLAS=/usr/lib/x86_64-linux-gnu/blas
[ -e "$REFERENCE_BLAS/libblas.so.3" ] && export LD_LIBRARY_PATH="$REFERENCE_BLAS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for script in [0-9a-z]*.py; do
  [ "$script" = fixtures.py ] && continue
  echo "== $script"
  "$PY" "$script"
done
