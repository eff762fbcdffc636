# common.sh: sourced by tests/install/*.sh.  Every command is printed before it runs, so a
# failing test's log shows what to repeat by hand.
set -euo pipefail
run() { echo "+ $*" >&2; "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# a README line: the one line of README.md that starts with $1 (the link lines are tested as
# written, so the README and the test cannot drift apart)
readme_line() {
  local n
  n=$(grep -c -- "^$1" "$SRC/README.md" || true)
  [ "$n" = 1 ] || fail "README.md: expected exactly one line starting with '$1', found $n"
  grep -- "^$1" "$SRC/README.md"
}
