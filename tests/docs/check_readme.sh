#!/usr/bin/env bash
# ctest label `docs`: run a chapter program with --no-plots (and the options
# of its quick_options.txt, below), and the chapter's other programs of its
# plots.txt (below), and check its README against their output
# (tests/docs/readme_check.cpp says how).
# The READMEs show the default build folder, build/: a program built
# elsewhere (build-clang, build-asan) prints its own, so that is mapped back.
set -euo pipefail
checker="$1" program="$2" readme="$3" source_dir="$4" binary_dir="$5"
chapter_dir=$(dirname "$readme")
out=$(mktemp)
trap 'rm -rf "$out" "$out".*' EXIT
# The chapter program runs from a copy in a build folder of its own: the
# checkpoints a program saves by default go beside its bin/ folder
# (default_checkpoint_dir), and ./book test must not replace the models a
# reader trained (./book run 7 --epochs 300) with the README's default run.
# Under a runner (qemu_aarch64.sh runs $PROG) the copy is $PROG's. The other
# programs of plots.txt stay where they were built.
programs_dir=$(dirname "${PROG:-$program}")
own_build="$out.build"
mkdir -p "$own_build/bin"
if [ -n "${PROG:-}" ]; then
  cp "$PROG" "$own_build/bin/"
  export PROG="$own_build/bin/$(basename "$PROG")"
else
  cp "$program" "$own_build/bin/"
  program="$own_build/bin/$(basename "$program")"
fi
# Both build folders, as the programs print them: whole, or relative to the
# repository's root when they lie inside it (CI's TMPDIR is build-tmp/ there).
relative=$(realpath --relative-to="$source_dir" "$binary_dir")
own_relative=$(realpath --relative-to="$source_dir" "$own_build")
shown_from_build() {  # raw output -> the paths as the README shows them
  sed -e "s#${own_build}/#build/#g" -e "s#\\b${own_relative}/#build/#g" \
    -e "s#${binary_dir}/#build/#g" -e "s#\\b${relative}/#build/#g" "$1"
}
# A chapter whose default run trains for minutes shows a shorter run in its
# README: the options of that run are in its folder's quick_options.txt
# (chapter 9: --quick), one line, and the README says so.
options=()
if [ -f "$chapter_dir/quick_options.txt" ]; then
  read -r -a options <"$chapter_dir/quick_options.txt"
fi
# (from the repository root, where the README has its reader run ./book: the
# paths a program prints are shown from the folder it runs in)
touch "$out.began"
(cd "$source_dir" && "$program" --no-plots "${options[@]}") >"$out.raw" 2>&1
# ... and wrote nothing into the build's own checkpoints.
written=$(find "$binary_dir/checkpoints" -type f -newer "$out.began" 2>/dev/null || true)
if [ -n "$written" ]; then
  echo "check_readme: the program wrote into the reader's checkpoints: $written" >&2
  exit 1
fi
shown_from_build "$out.raw" >"$out"
# The chapter's other programs that `./book plots` runs, one per line of its
# plots.txt (chapter 7's analysis command, on the checkpoint the chapter
# program has just saved): the README shows their output too, and it must
# not go stale either. Each output is checked apart: an excerpt lies within
# one, and only the chapter program's steps are the README's sections.
others=()
if [ -f "$chapter_dir/plots.txt" ]; then
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    eval "args=($line)"
    # The checkpoints it names are those the chapter program has just saved
    # in its own build folder; other files under build/ are this build's.
    for k in "${!args[@]}"; do
      if [[ "${args[k]}" == build/checkpoints/* ]]; then args[k]="$own_build/${args[k]#build/}"
      elif [[ "${args[k]}" == build/* ]]; then args[k]="$binary_dir/${args[k]#build/}"; fi
    done
    other="$out.${#others[@]}"
    # The program built beside the chapter program; under a runner
    # (qemu_aarch64.sh, "program" then runs $PROG), by the same runner.
    run=("$programs_dir/${args[0]}")
    if [ -n "${PROG:-}" ]; then
      run=(env PROG="$programs_dir/${args[0]}" "$program")
    fi
    if ! (cd "$source_dir" && "${run[@]}" "${args[@]:1}" --no-plots) >"$other.raw" 2>&1; then
      echo "check_readme: ${args[*]} failed:" >&2
      cat "$other.raw" >&2
      exit 1
    fi
    shown_from_build "$other.raw" >"$other"
    others+=("$other")
  done <"$chapter_dir/plots.txt"
fi
"$checker" "$readme" "$out" "${others[@]}"
