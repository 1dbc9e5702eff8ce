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
# Not made here: 09-gpt-curve.txt, 200 training iterations of chapter 9's
# default model, which take minutes of CPU on the reference BLAS. Its
# header gives the command that made it (ch09_gpt_twin.py --curve 200).
