#!/usr/bin/env bash
# `./book hint` and `./book reset`, that is book-exercise (tools/checker/,
# which ./book builds and execs with the tree's root), run here on a copy of
# the few files they read (ctest label `exercises`; seconds). The scanner
# they share with check's "Functions written: K of M" and each command's
# pieces have unit tests too (tests/checker/, label `checker`). Here:
#   - every exercise function has hints of at least two levels, and every
#     hints section names a function of its chapter's stubs;
#   - the stubs kept in tests/stubs are exactly what exercises/ holds in this
#     tree when exercises/ is untouched (checked by CI, .ci/run);
#   - asking again gives the next level, then stays at the last;
#   - `hint N` picks the first function still a stub;
#   - reset puts a written function back to its stub byte for byte, keeps the
#     reader's version under exercises/NN-name/saved/, and restores a deleted
#     function;
#   - every bad argument is refused with one line and status 2.
# usage: hint_reset.sh BOOK_EXERCISE (the program, built)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROGRAM=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { printf 'FAIL: %s\n' "$*"; failures=$((failures + 1)); }

mkdir -p "$WORK/tests" "$WORK/chapters"
cp "$ROOT/chapters/chapters.txt" "$WORK/chapters/"
cp -r "$ROOT/tests/hints" "$ROOT/tests/stubs" "$WORK/tests/"
cp -r "$ROOT/tests/stubs" "$WORK/exercises"   # a reader who has written nothing yet
while read -r c; do mkdir -p "$WORK/chapters/$c"; done < <(sed -n 's/^\([0-9][0-9]-[a-z0-9-]*\)[[:space:]]*$/\1/p' "$ROOT/chapters/chapters.txt")
book() { "$PROGRAM" "$WORK" "$@"; }  # as ./book execs it

# ---- the hints files against the stubs
for stubs in "$ROOT"/tests/stubs/*/; do
  c=$(basename "$stubs")
  functions=$(grep -ho 'SA_TODO("[a-z_0-9]*"' "$stubs"*.cpp | sed 's/SA_TODO("//; s/"$//' | sort)
  sections=$(grep '^== ' "$ROOT/tests/hints/$c.txt" | cut -c4- | sort)
  [ "$functions" = "$sections" ] ||
    fail "$c: the hints' sections ($(echo $sections)) are not the stubs' functions ($(echo $functions))"
  for fn in $functions; do
    levels=$(awk -v fn="$fn" '/^== / { on = (substr($0, 4) == fn); if (on) n = 1; next } on && /^--$/ { n++ } END { print n + 0 }' \
             "$ROOT/tests/hints/$c.txt")
    [ "$levels" -ge 2 ] || fail "$c $fn: $levels hint level(s), at least 2 wanted"
    # The stub's own hint must not be code: no statement ends in it.
    grep -A3 "SA_TODO(\"$fn\"" "$stubs"*.cpp | grep -qE '= [^=].*;|return ' &&
      fail "$c $fn: the stub's hint reads like code"
  done
done

# ---- levels
out=$(book hint 3 attention)
grep -q '^attention (exercises/03-softmax/softmax.cpp), hint 1 of 3: the idea' <<<"$out" || fail "first hint: $out"
grep -q 'More: ./book hint 3 attention' <<<"$out" || fail "first hint says how to get more: $out"
out=$(book hint 3 attention)
grep -q 'hint 2 of 3: the formula, with shapes' <<<"$out" || fail "second hint: $out"
grep -q '^  .*(seq_q, seq_k)' <<<"$out" || fail "second hint shows the shapes: $out"
out=$(book hint 3 attention)
grep -q 'hint 3 of 3: close to code' <<<"$out" || fail "third hint: $out"
grep -q 'That was the last hint for attention' <<<"$out" || fail "third hint says it is the last: $out"
out=$(book hint 3 attention)
grep -q 'hint 3 of 3' <<<"$out" || fail "a fourth ask stays at the last level: $out"
grep -qx '03-softmax attention 3' "$WORK/build/hint-levels" || fail "the level is kept in build/hint-levels"
out=$(book hint 3 focus)
grep -q 'hint 1 of' <<<"$out" || fail "another function starts at level 1: $out"

# ---- hint N: the first function still a stub
out=$(book hint 3)
grep -q '^softmax_rows ' <<<"$out" || fail "hint 3 starts with softmax_rows: $out"
# Write softmax_rows (any change to its body counts) and the next is next.
sed -i 's|^  SA_TODO("softmax_rows",|  return scores;  // mine\n&|' "$WORK/exercises/03-softmax/softmax.cpp"
cp "$WORK/exercises/03-softmax/softmax.cpp" "$WORK/mine.cpp"
out=$(book hint 3)
grep -q '^softmax_backward ' <<<"$out" || fail "hint 3 skips the written softmax_rows: $out"
# Comments and spacing alone do not make a function written.
sed -i 's|// TODO: the gradient of the scores|//   TODO:   the gradient of the scores (I read this)|' "$WORK/exercises/03-softmax/softmax.cpp"
out=$(book hint 3)
grep -q '^softmax_backward ' <<<"$out" || fail "an edited comment does not count as writing: $out"

# ---- reset
out=$(book reset 3 softmax_rows)
grep -q 'softmax_rows in exercises/03-softmax/softmax.cpp is its stub again' <<<"$out" || fail "reset says so: $out"
saved=$(sed -n 's/^Your version is kept in \(.*\)\.$/\1/p' <<<"$out")
[ -n "$saved" ] && [ -f "$WORK/$saved" ] || fail "reset names the saved copy: $out"
[[ "$saved" == exercises/03-softmax/saved/softmax_rows.*.cpp ]] || fail "the copy is kept beside the exercise: $saved"
grep -q 'return scores;  // mine' "$WORK/$saved" 2>/dev/null || fail "the saved copy holds the reader's body"
grep -q '^Matrix softmax_rows(const Matrix& scores) {' "$WORK/$saved" 2>/dev/null || fail "the saved copy holds the signature"
sed -i 's|//   TODO:   the gradient of the scores (I read this)|// TODO: the gradient of the scores|' "$WORK/exercises/03-softmax/softmax.cpp"
cmp -s "$WORK/exercises/03-softmax/softmax.cpp" "$ROOT/tests/stubs/03-softmax/softmax.cpp" ||
  fail "after reset the file is the stub again: $(diff "$WORK/exercises/03-softmax/softmax.cpp" "$ROOT/tests/stubs/03-softmax/softmax.cpp")"
out=$(book reset 3 softmax_rows)
grep -q 'already its stub' <<<"$out" || fail "resetting a stub changes nothing: $out"
# A deleted function comes back where it stood.
# (from its signature to the blank line after it)
sed -i '/^Attention attention(/,/^$/d' "$WORK/exercises/03-softmax/softmax.cpp"
book reset 3 attention >/dev/null
cmp -s "$WORK/exercises/03-softmax/softmax.cpp" "$ROOT/tests/stubs/03-softmax/softmax.cpp" ||
  fail "a deleted function is restored in place: $(diff "$WORK/exercises/03-softmax/softmax.cpp" "$ROOT/tests/stubs/03-softmax/softmax.cpp")"

# A file whose author removed sa/exercise.hpp (the stub's SA_TODO needs it)
# gets it back with the stub.
sed -i '/#include "sa\/exercise.hpp"/d; s|^  SA_TODO("focus",|  return 0.0;\n&|' "$WORK/exercises/03-softmax/softmax.cpp"
book reset 3 focus >/dev/null
grep -q '^#include "sa/exercise.hpp"' "$WORK/exercises/03-softmax/softmax.cpp" ||
  fail "reset puts back the header the stub needs"

# ---- refusals: one line on stderr, status 2, nothing on stdout
refused() {  # expected text, arguments...
  local want="$1" rc=0; shift
  book "$@" >"$WORK/stdout" 2>"$WORK/stderr" || rc=$?
  [ "$rc" -eq 2 ] || fail "./book $*: status $rc, 2 wanted"
  [ "$(wc -l <"$WORK/stderr")" -eq 1 ] || fail "./book $*: $(wc -l <"$WORK/stderr") lines on stderr, 1 wanted: $(cat "$WORK/stderr")"
  [ ! -s "$WORK/stdout" ] || fail "./book $*: printed on stdout: $(cat "$WORK/stdout")"
  grep -qF -- "$want" "$WORK/stderr" || fail "./book $*: '$(cat "$WORK/stderr")' does not say '$want'"
}
refused "which chapter?" hint
refused "no chapter '10'" hint 10
refused "no chapter 'x'" hint x
refused "chapter 3 has no exercise function 'softmax'; its functions: softmax_rows, softmax_backward, attention, row_entropy, focus" hint 3 softmax
refused "a chapter and at most one function" hint 3 attention focus
refused "which chapter and function?" reset
refused "which function? chapter 3's functions: softmax_rows" reset 3
refused "no chapter '0'" reset 0 attention
refused "chapter 8 has no exercise function 'attention'; its functions: online_softmax_update" reset 8 attention
refused "one chapter and one function" reset 3 attention focus

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "hint and reset: every check passed"
