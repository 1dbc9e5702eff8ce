#!/usr/bin/env bash
# ctest label `inputs`: figures on a full disk. A tmpfs of 512 KiB, mounted in
# a user namespace of its own (no root needed, nothing left mounted), holds
# a chapter's figure folder:
#  - a chapter program asked to draw there when it is already full refuses
#    before any work (exit 2, one line: the disk's free space);
#  - a figure that cannot be finished fails saying the disk is full, and the
#    old figure under its real name stays whole (test_common's hidden case
#    "[full-disk]").
# Where user namespaces are not allowed (a chroot, some containers), says so
# and exits 77, which ctest counts as skipped (SKIP_RETURN_CODE), not passed.
set -uo pipefail
bin="$1" tests="$2"
if ! unshare -rm true 2>/dev/null; then
  echo "full_disk: user namespaces are not available here; not run"
  exit 77
fi
mnt=$(mktemp -d)
trap 'rm -rf "$mnt" "$mnt.log"' EXIT
unshare -rm bash -s "$bin" "$tests" "$mnt" <<'INNER'
set -uo pipefail
bin="$1" tests="$2" mnt="$3" failed=0
mount -t tmpfs -o size=512k tmpfs "$mnt" || { echo "FAIL: could not mount a tmpfs"; exit 1; }
mkdir "$mnt/figures"
SA_FULL_DISK_DIR="$mnt/figures" "$tests/test_common" "[full-disk]" >"$mnt.log" 2>&1 ||
  { echo "FAIL: the [full-disk] case:"; cat "$mnt.log"; failed=1; }
rm -f "$mnt/figures/filler"
head -c 600k /dev/zero >"$mnt/filler" 2>/dev/null  # full: the write stops at the size
out=$(timeout 20 "$bin/06-dropout" --plots-dir "$mnt/figures/06" 2>&1 >/dev/null); status=$?
if [ "$status" -ne 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || [[ "$out" != *"free; at least 4 MiB are needed (the disk is full?)"* ]]; then
  echo "FAIL: 06-dropout --plots-dir on a full disk: status $status, expected 2 and one line about free space: $out"
  failed=1
fi
[ ! -e "$mnt/figures/06" ] || { echo "FAIL: the refused run left its figure folder behind"; failed=1; }
exit "$failed"
INNER
status=$?
[ "$status" -eq 0 ] && echo "full_disk: a full disk is named before any work, and a figure cut short leaves the old one whole"
exit "$status"
