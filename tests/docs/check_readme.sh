#!/usr/bin/env bash
# ctest label `docs`: run a chapter program with --no-plots (and the options
# of its quick_options.txt, below) and check its README against the output
# (tests/docs/readme_check.cpp says how).
# The READMEs show the default build folder, build/: a program built
# elsewhere (build-clang, build-asan) prints its own, so that is mapped back.
set -euo pipefail
checker="$1" program="$2" readme="$3" source_dir="$4" binary_dir="$5"
out=$(mktemp)
trap 'rm -f "$out" "$out.raw"' EXIT
# A chapter whose default run trains for minutes shows a shorter run in its
# README: the options of that run are in its folder's quick_options.txt
# (chapter 9: --quick), one line, and the README says so.
options=()
if [ -f "$(dirname "$readme")/quick_options.txt" ]; then
  read -r -a options <"$(dirname "$readme")/quick_options.txt"
fi
# (from the repository root, where the README has its reader run ./book: the
# paths a program prints are shown from the folder it runs in)
(cd "$source_dir" && "$program" --no-plots "${options[@]}") >"$out.raw" 2>&1
relative=$(realpath --relative-to="$source_dir" "$binary_dir")
sed -e "s#${binary_dir}/#build/#g" -e "s#\\b${relative}/#build/#g" "$out.raw" >"$out"
"$checker" "$readme" "$out"
