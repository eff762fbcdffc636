#!/usr/bin/env bash
# tests/mps/expect_fail.sh NP WEFT PATTERN ARGS...: `weft run ARGS --no-time` on NP ranks must fail,
# promptly (no hang), with every rank printing a line that matches the extended regex PATTERN.
set -u
np=$1 weft=$2 pattern=$3
shift 3
[ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null || { echo "no GPU here: SKIP"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench/mps.sh"
log=$(timeout 120 $MPIRUN -x WEFT_CACHE_DIR -np "$np" "$weft" run "$@" --no-time 2>&1)
rc=$?
echo "$log"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -ne 0 ] || fail "the run succeeded"
[ $rc -ne 124 ] || fail "the run hung (killed after 120 s)"
for r in $(seq 0 $((np - 1))); do
  echo "$log" | grep -E "rank $r: " | grep -qE "$pattern" || fail "rank $r printed no line matching: $pattern"
done
echo "PASS"
