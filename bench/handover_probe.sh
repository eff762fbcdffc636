#!/usr/bin/env bash
# bench/handover_probe.sh: split-K's hand-over with one release fence per hand-over and no go
# after the last split tile (this tree) against three copies of gen/ and templates/, on the GPU
# machine (run in the twentieth session: bench/RESULTS.md).  The copies, made on the host:
#   proto_old  an arrive.release.cluster per peer:  git archive 1ef3727 gen templates | tar -x -C proto_old
#   proto_f1   the fence, the last go kept:          git archive a1c8e6e gen templates | tar -x -C proto_f1
#   proto_go   this tree with the go loop's fence dropped and mbar_arrive_remote for its arrives
#              (a timing probe only: not a valid hand-over, see bench/xfer_rate.cu)
# and xfer_rate's three builds (bash bench/xfer_rate.sh --build; carry build/bench); then, with
# build/ built here:  OUT=$OUT bash bench/handover_probe.sh
set -u
OLD=$(realpath "${OLD_SRC:-proto_old}")   # (absolute: device_tests.sh runs ctest from build/)
[ -f "$OLD/templates/weft/gemm_splitk.cuh" ] || { echo "handover_probe.sh: $OLD: no copy of the old sources" >&2; exit 1; }
GO=$(realpath "${GO_SRC:-proto_go}")   # this tree with the flat sum's go as a plain remote arrive (no fence)
[ -f "$GO/templates/weft/gemm_splitk.cuh" ] || { echo "handover_probe.sh: $GO: no copy of the go variant" >&2; exit 1; }
O=${OUT:-/tmp/out}; mkdir -p "$O"
. bench/env.sh
echo "== the sums alone: a release per peer (xfer_rate), one fence per hand-over (xfer_rate_fence1), and a plain go (xfer_rate_go)"
for b in xfer_rate xfer_rate_fence1 xfer_rate_go; do
  XFER_BIN=build/bench/$b OUT=$O/$b bash bench/xfer_rate.sh 30 > /dev/null 2>&1; echo "-- $b rc $?"
  grep -E "^xfer (none|tree|flat|l2)" "$O/$b/xfer_rate.txt" | awk '{printf "%s S %s ctas %s R %s exchange_us %s kernel_us %s %s\n", $2, $4, $10, $14, $18, $24, $26}'
done
echo "== GPU tests of the sums (this tree)"
JOBS=8 OUT=$O/tests bash bench/device_tests.sh -R "gpu\.gemm\.(swap_ab_.*split|split_k$|n80_col_split_k2|split_k4_decode_col)" \
  --timeout 90 > "$O/tests.txt" 2>&1
grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$O/tests.txt" | head -12
WEFT_SOURCE_DIR=$GO JOBS=8 OUT=$O/tests_go bash bench/device_tests.sh -R "gpu\.gemm\.swap_ab_.*split" --timeout 90 > "$O/tests_go.txt" 2>&1
echo "== the same, the go variant:"; grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$O/tests_go.txt" | head -12
S="--set b_layout=col --set swap_ab=true --set epilogue=direct --set consumers=1 --set tile.n=64 --set group=16"
TS="--time-shape 130x1536x8960 --time-shape 130x1536x64 --time-shape 100x2048x7168 --time-shape 64x4096x14336"
for c in "tile.m=136 stages=7 split_k=4" "tile.m=104 stages=9 split_k=3" "tile.m=136 stages=7 split_k=5" "tile.m=72 stages=12 split_k=2" \
         "tile.m=72 stages=12 split_k=8"; do
  a=$(set_args "$c")
  for v in new f1 old go; do
    src=.; [ $v = old ] && src=$OLD; [ $v = go ] && src=$GO; [ $v = f1 ] && src=$(realpath proto_f1)
    # shellcheck disable=SC2086
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_ho_$v timeout 100 build/weft run examples/gemm.lua $S $a \
      --shape 1000x1000x1000 --shapes-only $TS --iters 30 > "$O/t.log" 2>&1
    cat "$O/t.log" >> "$O/time_$v.log"
    echo "== $v $c: $(grep -c PASS "$O/t.log") pass $(grep -c FAIL "$O/t.log") fail"
    gemm_run_rows "$O/t.log"
    grep -iE "error" "$O/t.log" | head -2 | cut -c1-200
  done
done
echo "== no sum at all (diag_gemm_bounds.sh nored): the floor any hand-over can reach"
OUT=$O/nored DIAG_KINDS="nored" DIAG_SHAPES="$TS" timeout 200 bash bench/diag_gemm_bounds.sh \
  "${S//--set /} tile.m=136 stages=7 split_k=4" "${S//--set /} tile.m=104 stages=9 split_k=3" "${S//--set /} tile.m=136 stages=7 split_k=5" \
  "${S//--set /} tile.m=72 stages=12 split_k=2" "${S//--set /} tile.m=72 stages=12 split_k=8" > "$O/nored.log" 2>&1
gemm_run_rows "$O/nored.log"
