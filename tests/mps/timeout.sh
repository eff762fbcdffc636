#!/usr/bin/env bash
# tests/mps/timeout.sh NP WEFT CONFIG MUTE_RANK SIGNAL [--set ...]: rank MUTE_RANK never sends
# SIGNAL (WEFT_FAULT); the size flags come with the test (--elems N for the allreduce).
# Passes if every rank fails with a message naming the rank it waited
# for, the signal and the epochs, within a few seconds of the 300 ms timeout: no hang.
set -u
np=$1 weft=$2 config=$3 mute=$4 sig=$5
shift 5
[ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null || { echo "no GPU here: SKIP"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench/mps.sh"
export WEFT_FAULT="mute:$mute:$sig" WEFT_SIGNAL_TIMEOUT_MS=300
t0=$(date +%s%N)
log=$(timeout 120 $MPIRUN -x WEFT_CACHE_DIR -x WEFT_FAULT -x WEFT_SIGNAL_TIMEOUT_MS -np "$np" "$weft" run "$config" "$@" \
      --no-time 2>&1)
rc=$?
t1=$(date +%s%N)
echo "$log"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -ne 0 ] || fail "the run succeeded although rank $mute never sent \"$sig\""
[ $rc -ne 124 ] || fail "the run hung (killed after 120 s)"
# ANY_RANK=1 (ag_gemm): one rank's timeout is enough -- the others may have finished that
# launch (they needed nothing from the muted signal) and stop on the agreed verdict instead
if [ "${ANY_RANK:-0}" = 1 ]; then
  echo "$log" | grep -q "rank [0-9]*: .*: rank [0-9]* timed out after 0\.[0-9]* s waiting for signal \"$sig\" from rank [0-9]* (block [0-9]*: expected epoch [0-9]*, saw [0-9]*)" ||
    fail "no rank printed a timeout message naming signal \"$sig\""
else
  for r in $(seq 0 $((np - 1))); do
    echo "$log" | grep -q "rank $r: .*: rank $r timed out after 0\.[0-9]* s waiting for signal \"$sig\" from rank [0-9]* (block [0-9]*: expected epoch [0-9]*, saw [0-9]*)" ||
      echo "$log" | grep -q "rank $r: .*timed out" || fail "rank $r printed no timeout message"
  done
fi
echo "$log" | grep -q "waiting for signal \"$sig\" from rank $mute" || fail "no rank named rank $mute as the one it waited for"
ms=$(( (t1 - t0) / 1000000 ))
echo "elapsed ${ms} ms (mpirun start-up included; the signal timeout is 300 ms)"
[ "$ms" -lt 30000 ] || fail "took ${ms} ms"
echo "PASS"
