#!/usr/bin/env bash
# The exercise loop against the mistakes readers make (ctest label `tooling`).
#
# On a copy of the repository, with the reference solutions of chapters 2 to
# 5 copied into exercises/, inject into chapter 3 an endless loop
# (row_entropy), a segmentation fault (focus), an index one past a matrix's end (softmax_backward: Eigen's check aborts) and a
# wrong value (attention's output doubled, with an unused variable the compiler warns about); into chapter 5 `throw 42`
# (mask_and) and std::exit(0) (padding_masks); into chapter 4 an endless loop
# in combine_heads, which multi_head_attention calls (a forgotten ++b: a
# loop without side effects, which the compiler may assume ends and delete
# unless told not to, -fno-finite-loops); into chapter 2 a compile error.
# Then `./book check --timeout 2` must finish, print the whole table, count
# every test case of each suite, and name each crashed or hung test case and
# what happened to it, in which function (for chapter 4: combine_heads, not
# the multi_head_attention a test is about). Finally --watch re-runs on a
# change and stops on Ctrl-C, and an exit() in causal_mask, which other
# functions' tests call, is named as causal_mask's; a copy of chapter 2's
# function in chapter 5's file is named as chapter 2's.
set -euo pipefail
# Under CI the copy keeps CI's -Werror, so that it is compiled with the same
# flags as the tree's own exercise track (./book check --untouched, just
# before) and the compiler cache answers for every file but the injected
# ones. The mistakes below are wrong behaviour or a real compile error; the
# one warning is kept a warning by a pragma, so -Werror changes nothing a
# reader would see.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }
expect() {  # pattern (fixed string), description
  grep -qF -- "$1" "$WORK/out" || fail "$2: expected to find: $1"
}

# ---- a copy of the tree, without its builds
tar -C "$ROOT" --exclude='./build*' --exclude='./.git' -cf - . | tar -C "$WORK" -xf -
B="$WORK"
# The mistakes go into chapters 2 to 5, so the copy's book ends at chapter 5:
# chapters 6 to 8 would add minutes of compiling (chapter 7's suite alone is
# a minute of CPU) and nothing the loop does differently. Their untouched
# stubs are checked on the whole tree (CI's ./book check --untouched).
sed -i '/^0[6-9]-/d; /^[1-9][0-9]-/d' "$B/chapters/chapters.txt"
grep -q '^05-' "$B/chapters/chapters.txt" || { echo "cannot cut the copy's chapter list after chapter 5"; exit 1; }
for c in 02-scaling 03-softmax 04-multi-head 05-causal-mask; do cp "$ROOT/solutions/$c/"*.cpp "$B/exercises/$c/"; done
inject() {  # file, line that opens the function, statement to put first in it
  grep -q "^$2" "$1" || { echo "cannot find '$2' in $1"; exit 1; }
  sed -i "/^$2/a\\  $3" "$1"
}
inject "$B/exercises/03-softmax/softmax.cpp" 'std::vector<double> row_entropy(' 'static volatile int spin = 0; while (spin == 0) {}'
inject "$B/exercises/03-softmax/softmax.cpp" 'double focus(' '{ volatile int* nowhere = nullptr; *nowhere = 1; }'
# One past the last row: Eigen's index check, on in the exercises' build, aborts.
inject "$B/exercises/03-softmax/softmax.cpp" 'Matrix softmax_backward(' '{ Matrix past(2, 2); past(2, 0) = 1.0f; }'
sed -i 's/result.output = result.weights \* V;/result.output = 2 * result.weights * V;/' "$B/exercises/03-softmax/softmax.cpp"
grep -q '2 \* result.weights' "$B/exercises/03-softmax/softmax.cpp" || { echo "cannot inject the wrong value"; exit 1; }
# ... beside a variable computed and never used, which the compiler warns about
# (a warning also under CI's -Werror: the pragma keeps it one).
inject "$B/exercises/03-softmax/softmax.cpp" 'Attention attention(' 'const double scale = 2.0;'
sed -i '1i #pragma GCC diagnostic warning "-Wunused-variable"' "$B/exercises/03-softmax/softmax.cpp"
inject "$B/exercises/04-multi-head/multihead.cpp" 'Matrix combine_heads(' \
  'int64_t rows = 0; for (int64_t b = 0; b < heads.batch();) rows += heads.seq(); (void)rows;'
inject "$B/exercises/05-causal-mask/mask.cpp" 'Mask mask_and(' 'throw 42;'
inject "$B/exercises/05-causal-mask/mask.cpp" 'std::vector<Mask> padding_masks(' 'std::exit(0);'
inject "$B/exercises/02-scaling/scaling.cpp" 'Matrix scaled_scores(' 'retrun Q;'

# ---- check, timed
start=$(date +%s)
rc=0
"$B/book" check --timeout 2 >"$WORK/out" 2>&1 || rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$WORK/out"
echo "(check took $elapsed s, exit status $rc)"
[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1 (some tests fail)"

# The table is complete: one line per chapter of the (copy's) book's list.
while read -r c; do
  grep -qE "^  $c " "$WORK/out" || fail "the table has no line for $c"
done < <(sed -n 's/^\([0-9][0-9]-[a-z0-9-]*\)[[:space:]]*$/\1/p' "$B/chapters/chapters.txt")

# Chapter 2 does not compile, and says where.
grep -A1 -E '^  02-scaling +✗  does not compile' "$WORK/out" |
  grep -qE 'exercises/02-scaling/scaling\.cpp:[0-9]+:[0-9]+: error: .*retrun' ||
  fail "chapter 2's line must say 'does not compile' and show the compiler's error with file:line"

# Counts, from the suites themselves.
source "$ROOT/tests/tooling/catch2_names.sh"
names() { catch2_names "$B/build/tests/test_$1_exercises" "$2"; }
count() { names "$1" "$2" | grep -c . || true; }
total3=$(count 03 ''); hang3=$(count 03 '[row_entropy]')
crash3=$(( $(count 03 '[focus]') + $(count 03 '[softmax_backward]') ))
# (attention's doubled output fails every attention test but the refusals)
wrong3=$(names 03 '[attention]' | grep -vc 'refused' || true)
pass3=$(( total3 - hang3 - crash3 - wrong3 ))
expect "$(printf '%-22s' 03-softmax) …  in progress   $pass3/$total3 tests, $wrong3 failed, $crash3 crashed, $hang3 timed out" "chapter 3's counts"
total5=$(count 05 ''); crash5=$(( $(count 05 '[mask_and]') + $(count 05 '[padding_masks]') ))
expect "$(printf '%-22s' 05-causal-mask) …  in progress   $((total5 - crash5))/$total5 tests, $crash5 crashed" "chapter 5's counts"

# Every crashed or hung test case is named, with what happened: listed in a
# group of test cases that broke the same way, above the group's message,
# or counted in the group's "... and N more" line.
# groups: one line per listed test case, "name TAB message", and one per
# "... and N more" line, "+N TAB message".
groups() {
  awk '/^      ✗ \.\.\. and [0-9]+ more test cases the same way$/ { split($0, w, " "); pending[++n] = "+" w[4]; next }
       /^      ✗ / { sub(/^      ✗ /, ""); pending[++n] = $0; next }
       /^          / && n { sub(/^          /, ""); for (i = 1; i <= n; i++) print pending[i] "\t" $0; n = 0; next }
       { n = 0 }' "$1"
}
named() {  # chapter number, tag, what the message must say
  local name unlisted=0 more
  groups "$WORK/out" >"$WORK/groups"
  while read -r name; do
    grep -F -- "$name"$'\t' "$WORK/groups" | grep -qF -- "$3" || unlisted=$((unlisted + 1))
  done < <(names "$1" "$2")
  more=$(awk -F'\t' -v m="$3" '$1 ~ /^\+/ && index($2, m) { n += substr($1, 2) } END { print n + 0 }' "$WORK/groups")
  [ "$unlisted" -le "$more" ] ||
    fail "$unlisted test case(s) of $2 are neither named with '$3' nor counted in an 'and N more' line saying it"
}
named 03 '[row_entropy]' 'timed out after 2 s'
named 03 '[focus]' 'crashed: segmentation fault'
named 03 '[softmax_backward]' 'crashed: m(i, j) with an index outside the matrix'
named 05 '[mask_and]' 'crashed: uncaught exception of type int'
named 05 '[padding_masks]' 'crashed: exited early'
# A wrong value is named at once, with what was expected, and "Fix:" points
# at a broken function before any function still to write.
grep -A1 -E '✗ .*attention' "$WORK/out" | grep -qiE 'expected' ||
  fail "a failing attention test must be named with what was expected"
grep -qE '^Fix: ' "$WORK/out" || fail "with wrong answers and crashes present, the advice must be 'Fix:', not 'Next:'"
# The compiler's warning is shown under the chapter whose tests fail.
expect "the compiler warned about your code (often the cause):" "the warnings' heading"
grep -A1 -F 'the compiler warned about your code' "$WORK/out" | grep -qF "exercises/03-softmax/softmax.cpp:" ||
  fail "the unused variable in attention must be shown at its line of exercises/03-softmax/softmax.cpp"
# Functions under test are named too.
expect "in row_entropy" "the hung function"
expect "in focus" "the crashed function"
# A hang is placed in the function that never returned, even when the test
# case is about its caller.
grep -F -- $'multi_head_attention: a batch of 3 sequences matches PyTorch\t' "$WORK/groups" |
  grep -qF 'timed out after 2 s (an endless loop?), in combine_heads' ||
  grep -E $'^\\+[0-9]+\t' "$WORK/groups" | grep -qF 'timed out after 2 s (an endless loop?), in combine_heads' ||
  fail "a multi_head_attention test hung in combine_heads must say 'in combine_heads'"
# Test cases that broke the same way share one message, with at most four
# named (three and "... and N more" beyond four): chapter 4's endless loop
# in combine_heads reaches more tests than that, and they are one group.
[ "$(grep -c 'in combine_heads$' "$WORK/out")" -eq 1 ] ||
  fail "the test cases hung in combine_heads must share one message: $(grep -c 'in combine_heads$' "$WORK/out") found"
hang4=$(sed -nE 's/^  04-multi-head .*, ([0-9]+) timed out$/\1/p' "$WORK/out")
[ -n "$hang4" ] || fail "chapter 4's line must count the tests that timed out"
if [ "${hang4:-0}" -gt 4 ]; then
  expect "✗ ... and $((hang4 - 3)) more test cases the same way" "chapter 4's hung tests beyond the first three, counted"
fi

# After the first hang the other test cases get 3 s (a time limit above
# that would make one endless loop reached by many tests cost minutes),
# and the summary says so.
rc=0; "$B/book" check 4 --timeout 5 >"$WORK/out4" 2>&1 || rc=$?
grep -qF '(After the first test that hung, the others had 3 s each instead of 5 s.)' "$WORK/out4" ||
  fail "check 4 --timeout 5 must say the limit dropped to 3 s after the first hang: $(cat "$WORK/out4")"

# One chapter by number: its line only. (Chapter 1 is untouched, so this
# costs a second; how a wrong value reads is in the table above, and in the
# checker's unit tests, ctest -L checker.)
"$B/book" check 1 --timeout 2 >"$WORK/out1" 2>&1 || true
grep -qE '^  01-qkv-projection ' "$WORK/out1" && ! grep -qE '^  0[2-9]-' "$WORK/out1" ||
  fail "./book check 1 must show chapter 1 only: $(cat "$WORK/out1")"
# --json: one object per test case on stdout, the progress lines on stderr.
rc=0; "$B/book" check 1 --timeout 2 --json >"$WORK/json" 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] && [ "$(head -c1 "$WORK/json")" = "{" ] &&
  [ "$(grep -c '"status": "todo"' "$WORK/json")" -eq "$(count 01 '')" ] ||
  fail "check 1 --json must print one todo object per test case of chapter 1 (exit $rc): $(head -c 300 "$WORK/json")"

# Bad usage: exit 2 with one line.
rc=0; "$B/book" check --bogus >"$WORK/bad" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$WORK/bad")" -eq 1 ] || fail "./book check --bogus: exit $rc, $(cat "$WORK/bad")"

# --watch: runs, re-runs after a change under exercises/, stops cleanly on Ctrl-C.
# (job control on: a background job of a script ignores SIGINT otherwise;
# with it the watcher has its own process group, as at a terminal)
set -m
"$B/book" check 5 --timeout 2 --watch >"$WORK/watch" 2>&1 &
watcher=$!
set +m
for _ in $(seq 120); do [ "$(grep -c 'Watching exercises/' "$WORK/watch")" -ge 1 ] && break; sleep 0.5; done
sed -i '/throw 42;/d' "$B/exercises/05-causal-mask/mask.cpp"
for _ in $(seq 120); do [ "$(grep -c 'Watching exercises/' "$WORK/watch")" -ge 2 ] && break; sleep 0.5; done
kill -INT -- "-$watcher" 2>/dev/null || true
rc=0; wait "$watcher" || rc=$?
[ "$(grep -c 'Watching exercises/' "$WORK/watch")" -ge 2 ] || fail "--watch did not re-run after a change: $(cat "$WORK/watch")"
grep -qF "$((total5 - $(count 05 '[padding_masks]')))/$total5 tests" "$WORK/watch" ||
  fail "--watch's second run must count the fixed mask_and as passing"
grep -qF 'stopped watching' "$WORK/watch" && [ "$rc" -eq 0 ] || fail "--watch must stop cleanly on Ctrl-C (exit $rc)"

# exit() in a function that other functions' test cases call is placed in
# that function, not in the function each test case is about (the chapter
# program's path, a [masked_attention] test, calls causal_mask first).
cp "$ROOT/solutions/05-causal-mask/mask.cpp" "$B/exercises/05-causal-mask/mask.cpp"
inject "$B/exercises/05-causal-mask/mask.cpp" 'Mask causal_mask(' 'std::exit(0);'
"$B/book" check 5 --timeout 2 >"$WORK/out5" 2>&1 || true
grep -qF 'crashed: exited early with exit status 0 (exit() inside the exercise?), in causal_mask' "$WORK/out5" &&
  [ "$(grep -c 'crashed: exited early' "$WORK/out5")" -eq 2 ] ||  # the group's message and Fix:'s
  fail "every test case that reached exit() in causal_mask must say 'in causal_mask', in one group: $(cat "$WORK/out5")"

# So is an exception nobody expected, thrown in causal_mask: its text shown,
# and the function that threw it named.
cp "$ROOT/solutions/05-causal-mask/mask.cpp" "$B/exercises/05-causal-mask/mask.cpp"
inject "$B/exercises/05-causal-mask/mask.cpp" 'Mask causal_mask(' 'if (seq_len > 1) throw std::string("no mask today");'
sed -i '1i #include <string>' "$B/exercises/05-causal-mask/mask.cpp"
"$B/book" check 5 --timeout 2 >"$WORK/out5" 2>&1 || true
grep -qF 'crashed: uncaught exception of type std::string: "no mask today", in causal_mask' "$WORK/out5" ||
  fail "a std::string thrown in causal_mask must be named with its text and 'in causal_mask': $(cat "$WORK/out5")"
grep -F 'no mask today' "$WORK/out5" | grep -vqF 'in causal_mask' &&
  fail "every test case that met the throw in causal_mask must say 'in causal_mask': $(cat "$WORK/out5")"

# A crash at a function's first instruction (a store through a null
# pointer) is that function's, not the one before it in the file: the
# interrupted frame's address is exact, not a return address.
cp "$ROOT/solutions/05-causal-mask/mask.cpp" "$B/exercises/05-causal-mask/mask.cpp"
inject "$B/exercises/05-causal-mask/mask.cpp" 'Mask mask_and(' '{ volatile int* nowhere = nullptr; *nowhere = 1; }'
"$B/book" check 5 --timeout 2 >"$WORK/out5" 2>&1 || true
grep -qF 'crashed: segmentation fault' "$WORK/out5" && ! grep -F 'crashed: segmentation fault' "$WORK/out5" |
  grep -vqF 'in mask_and' || fail "a segfault at mask_and's first instruction must say 'in mask_and': $(cat "$WORK/out5")"

# A copy of an earlier chapter's function in an exercise file (chapter 2's
# scaled_scores, wrong, as a helper of chapter 5) is named as that chapter's:
# linked as usual it would silently replace the book's for every caller.
cp "$ROOT/solutions/05-causal-mask/mask.cpp" "$B/exercises/05-causal-mask/mask.cpp"
printf '%s\n' 'namespace sa {' 'Matrix scaled_scores(const Matrix& Q, const Matrix& K) { return Q * K.transpose(); }' '}' \
  >>"$B/exercises/05-causal-mask/mask.cpp"
"$B/book" check 5 --timeout 2 >"$WORK/out5" 2>&1 || true
grep -qF "is chapter 2's function (chapters/02-scaling/scaling.hpp), and exercises/05-causal-mask/mask.cpp defines it again" \
  "$WORK/out5" || fail "a copy of chapter 2's scaled_scores in exercises/05 must be named: $(tail -5 "$WORK/out5")"

# A deleted exercise file: check names it, and reset (which must still
# build) puts it back.
rm "$B/exercises/05-causal-mask/mask.cpp"
"$B/book" check 5 --timeout 2 >"$WORK/out5" 2>&1 || true
grep -qF 'exercises/05-causal-mask/mask.cpp is missing: ./book reset 5 FUNCTION puts one of its functions back' \
  "$WORK/out5" || fail "check 5 without mask.cpp must name the missing file: $(tail -5 "$WORK/out5")"
"$B/book" reset 5 causal_mask >"$WORK/reset5" 2>&1 || true
cmp -s "$B/exercises/05-causal-mask/mask.cpp" "$ROOT/tests/stubs/05-causal-mask/mask.cpp" ||
  fail "reset 5 causal_mask must restore the deleted mask.cpp from its stub: $(cat "$WORK/reset5")"

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "the exercise loop survived every injected mistake"
