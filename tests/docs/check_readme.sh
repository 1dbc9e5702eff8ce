#!/usr/bin/env bash
# ctest label `docs`: run a chapter program with --no-plots and check its
# README against the output (tests/docs/readme_check.cpp says how).
set -euo pipefail
checker="$1" program="$2" readme="$3"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$program" --no-plots >"$out" 2>&1
"$checker" "$readme" "$out"
