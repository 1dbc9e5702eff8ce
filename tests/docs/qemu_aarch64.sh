#!/usr/bin/env bash
# Runs the aarch64 program $PROG under qemu-user with Debian's arm64 runtime
# (/usr/aarch64-linux-gnu), passing the arguments on: check_readme.sh's
# "program" when CI checks the cross-compiled chapters (.ci/run, aarch64).
# check_readme.sh runs a chapter's other programs (its plots.txt) through it
# too, with PROG set to the program beside the chapter's.
exec qemu-aarch64 -L /usr/aarch64-linux-gnu "$PROG" "$@"
