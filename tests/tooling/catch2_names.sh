# Sourced by the tooling scripts: catch2_names SUITE [SPEC]: the names of
# the suite's test cases (those SPEC selects), one a line. Catch2 2 lists
# them with --list-test-names-only, and exits with their number (hence the
# || true); Catch2 3 with --list-tests --verbosity quiet.
catch2_names() {
  local suite=$1 list=(--list-test-names-only)
  shift
  # (the help read whole: grep -q stopping early would fail the pipe)
  [[ $("$suite" --help) == *--list-test-names-only* ]] || list=(--list-tests --verbosity quiet)
  { "$suite" "${list[@]}" "$@" || true; } | grep -v '^$' || true
}
