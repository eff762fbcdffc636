#!/usr/bin/env bash
# A PDL kernel that skipped griddepcontrol.wait must not pass `weft run`'s check: from a copy of
# the sources without the wait, the pdl chain (a launch reading the C its predecessor is still
# writing) must fail; the real sources must pass.  Exit 77 (SKIP) where there is no GPU.
#   pdl_nowait.sh WEFT SRC OUT
set -u
WEFT=$1 SRC=$2 OUT=$3
rm -rf "$OUT" && mkdir -p "$OUT/src" && cp -r "$SRC/gen" "$SRC/templates" "$OUT/src/"
cuh=$OUT/src/templates/weft/ag_gemm.cuh
grep -q '^    griddep_wait();$' "$cuh" || { echo "the PDL wait line moved: update $0"; exit 1; }
sed -i 's/^    griddep_wait();$/    \/\/ (removed by pdl_nowait.sh)/' "$cuh"
run() {   # run SOURCES: weft run's exit status; its output in $OUT/log
  WEFT_SOURCE_DIR=$1 WEFT_CACHE_DIR=$OUT/cache "$WEFT" run "$SRC/examples/gemm.lua" --set pdl=true \
    --shapes-only --shape 1000x1000x1000 --no-time >"$OUT/log" 2>&1
}
run "$OUT/src"; rc=$?
[ $rc -eq 77 ] && { cat "$OUT/log"; exit 77; }
if [ $rc -eq 0 ] || ! grep -q "pdl chain FAIL" "$OUT/log"; then
  echo "without griddepcontrol.wait, weft run exited $rc and did not report the pdl chain failing:"; cat "$OUT/log"; exit 1
fi
grep "pdl chain FAIL" "$OUT/log" | head -2
run "$SRC"; rc=$?
if [ $rc -ne 0 ] || ! grep -q "PASS (pdl chain" "$OUT/log"; then
  echo "the real sources: weft run exited $rc without the pdl chain passing:"; cat "$OUT/log"; exit 1
fi
echo "pdl: a kernel without the wait is caught; the real kernel passes the chain"
