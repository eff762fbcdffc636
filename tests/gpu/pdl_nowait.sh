#!/usr/bin/env bash
# A PDL kernel that skipped griddepcontrol.wait must not pass `weft run`'s check: from a copy of
# the sources without the wait, the pdl chain (a launch reading what its predecessor, started
# just before, is still writing) must fail; the real sources must pass it.  Exit 77 (SKIP) where
# there is no GPU.
#   pdl_nowait.sh WEFT SRC OUT gemm            family gemm (gemm_kernel.cuh), one process
#   pdl_nowait.sh WEFT SRC OUT allreduce NP    the allreduce (allreduce.cuh), NP ranks under MPS
set -u
WEFT=$1 SRC=$2 OUT=$3 WHAT=$4 NP=${5:-1}
[ -e /dev/nvidiactl ] && command -v nvidia-smi >/dev/null || { echo "no GPU here: SKIP"; exit 77; }
rm -rf "$OUT" && mkdir -p "$OUT/src" && cp -r "$SRC/gen" "$SRC/templates" "$OUT/src/"
case $WHAT in
  gemm) cuh=$OUT/src/templates/weft/gemm_kernel.cuh; line='    griddep_wait();'
        args=("$SRC/examples/gemm.lua" --shapes-only --shape 1000x1000x1000); launch=() ;;
  allreduce) cuh=$OUT/src/templates/weft/allreduce.cuh; line='    griddep_wait();'
        args=("$SRC/examples/allreduce.lua" --elems 1048579)
        . "$SRC/bench/mps.sh"
        launch=($MPIRUN -x WEFT_SOURCE_DIR -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -np "$NP") ;;
  *) echo "pdl_nowait.sh: gemm or allreduce, not '$WHAT'"; exit 2 ;;
esac
grep -qxF "$line" "$cuh" || { echo "the PDL wait line moved in $cuh: update $0"; exit 1; }
grep -vxF "$line" "$cuh" >"$cuh.new" && mv "$cuh.new" "$cuh"
run() {   # run SOURCES: weft run's exit status; its output in $OUT/log
  WEFT_SOURCE_DIR=$1 WEFT_CACHE_DIR=$OUT/cache WEFT_SIGNAL_TIMEOUT_MS=3000 timeout 300 \
    "${launch[@]}" "$WEFT" run "${args[@]}" --set pdl=true --no-time >"$OUT/log" 2>&1
}
run "$OUT/src"; rc=$?
if [ $rc -eq 0 ] || ! grep -qE "pdl chain.*FAIL|FAIL.*pdl chain|timed out" "$OUT/log"; then
  echo "without griddepcontrol.wait, weft run exited $rc and did not report the pdl chain failing:"; cat "$OUT/log"; exit 1
fi
grep -E "pdl chain|timed out" "$OUT/log" | head -3
run "$SRC"; rc=$?
if [ $rc -ne 0 ] || ! grep -qE "PASS \(pdl chain|chained pdl pairs" "$OUT/log"; then
  echo "the real sources: weft run exited $rc without the pdl chain passing:"; cat "$OUT/log"; exit 1
fi
echo "pdl ($WHAT): a kernel without the wait is caught; the real kernel passes the chain"
