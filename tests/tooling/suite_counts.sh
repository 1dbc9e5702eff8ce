#!/usr/bin/env bash
# ctest label `suites` (part of `./book test`): no test case is lost on its
# way to ctest, and check's count of an untouched chapter's test cases is
# the suite's.
#   - ctest's test discovery silently merges Catch2 test cases whose names
#     hold '[' or ';': every test case the suites list must be a ctest test
#     (with the tests that are not Catch2 cases, labels docs, inputs,
#     exercises and suites, counted apart; `tooling` is CI's, left out as
#     ./book test leaves it out).
#   - ./book check does not build an untouched chapter's suite: it counts
#     its test cases from the source, the lines that start with TEST_CASE(
#     (tools/checker/main.cpp, suite_size). That count must be what the
#     built suite lists.
# usage: suite_counts.sh CTEST BUILD_DIR SOURCE_DIR CHAPTER...
set -euo pipefail
ctest=$1 build=$2 source=$3
shift 3
failed=0

source "$(dirname "${BASH_SOURCE[0]}")/catch2_names.sh"
listed() {  # suite: the number of test cases it lists
  catch2_names "$build/tests/$1" | grep -c . || true
}
registered() {  # ctest's label options: the number of tests ctest has
  "$ctest" --test-dir "$build" -N "$@" | sed -n 's/^Total Tests: //p'
}

expected=$(( $(listed test_common) + $(listed test_checker) ))
for c in "$@"; do
  n=$(listed "test_${c:0:2}_solutions")
  expected=$((expected + n))
  in_source=$(cat "$source/tests/$c/"*.cpp | grep -c '^TEST_CASE(' || true)
  if [ "$n" != "$in_source" ]; then
    echo "tests/$c/ holds $in_source lines starting with TEST_CASE( but its suite lists $n test cases (./book check counts the former)"
    failed=1
  fi
done
expected=$((expected + $(registered -L 'docs|inputs|exercises|suites')))
total=$(registered -LE tooling)
if [ "$total" != "$expected" ]; then
  echo "ctest registered $total tests but the suites hold $expected (a test name with '[' or ';'?)"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "$total tests registered, as many as the suites hold; every chapter's count from its source is its suite's"
exit "$failed"
