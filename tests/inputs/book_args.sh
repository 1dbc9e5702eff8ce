#!/usr/bin/env bash
# ctest label `inputs`: ./book refuses a command line it does not understand
# with one line on stderr that ends by pointing to `./book help`, exit
# status 2, nothing on stdout, and before anything is built. The script
# runs from a copy of the tree that holds no CMakeLists.txt, so any attempt
# to configure or build would fail with another message.
set -uo pipefail
root="$1"
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
cp "$root/book" "$fake/book"
mkdir -p "$fake/chapters"
cp "$root/chapters/chapters.txt" "$fake/chapters/"
for c in "$root"/chapters/[0-9][0-9]-*/; do
  name=$(basename "$c")
  mkdir -p "$fake/chapters/$name"
  [ ! -f "$c/bench.cpp" ] || cp "$c/bench.cpp" "$fake/chapters/$name/"
done
failed=0 ran=0

refuse() {  # expected piece of the message, then the arguments
  local expected="$1" out err status lines
  shift
  out=$(mktemp) err=$(mktemp)
  (cd "$fake" && timeout 20 ./book "$@") >"$out" 2>"$err"
  status=$?
  lines=$(wc -l <"$err")
  ran=$((ran + 1))
  if [ "$status" -ne 2 ] || [ -s "$out" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$expected" "$err" ||
     ! grep -qF -- "./book help" "$err"; then
    failed=$((failed + 1))
    echo "FAIL: ./book $* (status $status, expected 2)"
    echo "  expected one line on stderr holding: $expected, and ./book help"
    echo "  stderr ($lines lines): $(head -c 400 "$err")"
    [ -s "$out" ] && echo "  stdout (must be empty): $(head -c 200 "$out")"
  fi
  rm -f "$out" "$err"
}

refuse "unknown command 'foo'" foo
refuse "the command is an empty word" ""
refuse "no chapter '99': chapters are numbered 1 to" plots 99
refuse "no chapter '0'" plots 0
refuse "no chapter '3-bogus': chapter 3 is 03-softmax (or just 3)" run 3-bogus
refuse "which chapter?" run
refuse "no chapter '42'" run 42
refuse "bench: --csv is an option of chapter 8's benchmark only: ./book bench 8 --csv" bench --csv
refuse "bench: no benchmark has the option '--bogus'" bench --bogus
refuse "bench: --csv is an option of chapter 8's benchmark only: ./book bench 8 --csv" bench 9 --csv
refuse "bench: --steps is an option of the benchmarks of chapters 7 and 9 only: ./book bench 7 --steps 5" bench --steps 5
# --seed and --i-know-it-is-big are every program's (common/src/cli.cpp):
# they pass the check (and then this tree, which cannot build, stops).
for flag in --seed=1 --i-know-it-is-big; do
  ran=$((ran + 1))
  err=$(cd "$fake" && timeout 20 ./book bench 7 "$flag" 2>&1 >/dev/null)
  if grep -qF "no benchmark has the option" <<<"$err"; then
    failed=$((failed + 1))
    echo "FAIL: ./book bench 7 $flag was refused: $err"
  fi
done
refuse "help takes no arguments, got 'x'" help x
refuse "test takes no arguments" test --now
refuse "plots takes at most one chapter number" plots 1 2

# `sh book` (dash on Debian) would stop at `set -o pipefail`: it says to use bash.
ran=$((ran + 1))
err=$(cd "$fake" && sh ./book run 1 2>&1 >/dev/null); status=$?
if [ "$status" -ne 2 ] || [[ "$err" != "book: run it with bash: ./book run (or bash book run), not sh" ]]; then
  failed=$((failed + 1))
  echo "FAIL: sh book run 1 (status $status): $err"
fi

# A TMPDIR that names no folder: test and check, whose suites write there,
# say so in one line before building anything (this tree cannot build).
for command in test check; do
  ran=$((ran + 1))
  err=$(cd "$fake" && TMPDIR="$fake/no such folder" timeout 20 ./book $command 2>&1 >/dev/null); status=$?
  if [ "$status" -ne 2 ] || [ "$(wc -l <<<"$err")" -ne 1 ] ||
     [[ "$err" != "book: TMPDIR is '$fake/no such folder', which is no folder; the tests write"* ]]; then
    failed=$((failed + 1))
    echo "FAIL: ./book $command with a TMPDIR that names no folder (status $status): $err"
  fi
done

# A BOOK_JOBS that is no count of compilers: one line, before anything.
for jobs in 0 abc 4x; do
  ran=$((ran + 1))
  err=$(cd "$fake" && BOOK_JOBS=$jobs timeout 20 ./book run 1 2>&1 >/dev/null); status=$?
  if [ "$status" -ne 2 ] || [[ "$err" != "book: BOOK_JOBS is '$jobs': the compilers to run at once, a whole number"* ]]; then
    failed=$((failed + 1))
    echo "FAIL: ./book run 1 with BOOK_JOBS=$jobs (status $status): $err"
  fi
done

# The compilers ./book runs at once: one a core, no more than one a GiB of
# available memory. A /proc/meminfo of 1.5 GiB available, mounted over the
# real one in a mount namespace (root; skipped where there is none), and a
# cmake on PATH that says how it was called: ./book build runs 1 at once.
if unshare -m sh -c 'mount --bind /dev/null /proc/meminfo' 2>/dev/null; then
  ran=$((ran + 1))
  mkdir -p "$fake/bin" "$fake/build"
  printf '#!/bin/sh\necho "cmake $*"\n' >"$fake/bin/cmake"
  chmod +x "$fake/bin/cmake"
  printf 'MemTotal:       33554432 kB\nMemAvailable:    1572864 kB\n' >"$fake/meminfo"
  called=$(cd "$fake" && PATH="$fake/bin:$PATH" timeout 20 env -u BOOK_JOBS unshare -m sh -c \
    'mount --bind "$1" /proc/meminfo && exec ./book build' sh "$fake/meminfo" 2>&1)
  if ! grep -qxF -- "cmake --build $fake/build -j 1" <<<"$called"; then
    failed=$((failed + 1))
    echo "FAIL: ./book build with 1.5 GiB available ran more than one compiler at once:"
    echo "  $called"
  fi
else
  echo "skipped: ./book's compilers on little memory (no mount namespace here)"
fi

echo "$ran bad ./book command lines, $failed not refused as they should be"
[ "$failed" -eq 0 ]
