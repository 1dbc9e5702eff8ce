#!/usr/bin/env bash
# ctest label `inputs`: a clone made with core.autocrlf=true (Git for
# Windows' default) still gets LF line ends (.gitattributes), so ./book and
# the scripts run. It clones the committed HEAD of the source tree: a change
# to .gitattributes is tested once committed. Skipped (77) outside a git
# work tree, as in a tarball of the book.
set -uo pipefail
root="$1"
git -C "$root" rev-parse --verify -q HEAD >/dev/null 2>&1 || { echo "not a git work tree: skipped"; exit 77; }
clone=$(mktemp -d)
trap 'rm -rf "$clone"' EXIT
git -c core.autocrlf=true clone -q --no-hardlinks "$root" "$clone/book" || { echo "FAIL: git clone of $root"; exit 1; }
failed=0
crlf=$(git -C "$clone/book" -c core.autocrlf=true ls-files --eol | awk '$2 == "w/crlf" || $2 == "w/mixed" { print $NF }')
if [ -n "$crlf" ]; then
  echo "FAIL: checked out with CRLF under core.autocrlf=true: $(echo "$crlf" | head -5 | tr '\n' ' ')"
  failed=1
fi
if ! out=$(cd "$clone/book" && ./book help 2>&1); then
  echo "FAIL: ./book help in the autocrlf clone: $(echo "$out" | head -2)"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "a clone with core.autocrlf=true has LF line ends, and ./book runs"
exit "$failed"
