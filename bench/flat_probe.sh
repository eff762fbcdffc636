#!/usr/bin/env bash
# bench/flat_probe.sh: split-K's flat sum for swapped tiles (this tree: its slices through the
# peers' shared memory; and "l2", a copy with gen/core/gemm.lua's FLAT_VIA_L2 = true: through the
# runtime's workspace) against the tree sum (the sources before the flat sum, 73ec5b8, copied
# beside it), on the GPU machine; run in the twentieth session (bench/RESULTS.md).  Make the copy
# and the transport probe on the host first, and carry both (proto_tree is not ignored; build/bench is):
#   rm -rf proto_tree && mkdir proto_tree && git archive 73ec5b8 gen templates | tar -x -C proto_tree
#   bash bench/xfer_rate.sh --build
# then, with build/ built here:  OUT=$OUT bash bench/flat_probe.sh
#   0. bench/xfer_rate.sh: each transport alone (tree, flat, l2, bulk) at the GEMM's sizes;
#   1. the GPU tests of the sums (swapped splits, the tree's own, the unswapped direct store), with
#      the flat sum both ways;
#   2. the same configs timed under the three sums, checked at 1000^3 and against cuBLAS, cuBLASLt
#      in the same process (130 x 1536 x 64: one k-block, the fixed cost; the eighteenth session
#      measured the tree's 136 x 64 split 4 at 7.42 us there, the unsplit tile at 3.57, cuBLASLt at
#      2.39);
#   3. no sum at all (diag_gemm_bounds.sh's nored): what no transport can beat;
#   4. the rule's pick with the flat sum in its model (a copy with M.MODEL.RED_FLAT_US, default 1.5 us)
#      against main's rule.
set -u
TREE=${TREE_SRC:-proto_tree}
[ -f "$TREE/templates/weft/gemm_splitk.cuh" ] || { echo "flat_probe.sh: $TREE: no copy of main's sources (see the header)" >&2; exit 1; }
O=${OUT:-/tmp/out}; mkdir -p "$O"
. bench/env.sh
echo "== transports alone (bench/xfer_rate.sh)"
OUT=$O bash bench/xfer_rate.sh > /dev/null 2>&1; grep -E "^xfer" "$O/xfer_rate.txt" | cut -c1-220
L2=/tmp/weft_flat_l2; rm -rf "$L2" && mkdir -p "$L2" && cp -r gen templates "$L2"/
sed -i 's/^M.FLAT_VIA_L2 = false/M.FLAT_VIA_L2 = true/' "$L2/gen/core/gemm.lua"
grep -q "^M.FLAT_VIA_L2 = true" "$L2/gen/core/gemm.lua" || { echo "flat_probe.sh: FLAT_VIA_L2 not set in the copy" >&2; exit 1; }
R="gpu\.gemm\.(swap_ab_.*split|split_k$|n80_col_split_k2|split_k4_decode_col)"
JOBS=6 OUT=$O/tests_flat bash bench/device_tests.sh -R "$R" > "$O/tests.txt" 2>&1
echo "== tests, flat through shared memory:"; grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$O/tests.txt" | head -12
WEFT_SOURCE_DIR=$L2 JOBS=6 OUT=$O/tests_l2 bash bench/device_tests.sh -R "gpu\.gemm\.swap_ab_.*split" > "$O/tests_l2.txt" 2>&1
echo "== tests, flat through L2:"; grep -E "tests passed|tests failed|\*\*\*|Failed|Not Run" "$O/tests_l2.txt" | head -12
S="--set b_layout=col --set swap_ab=true --set epilogue=direct --set consumers=1 --set tile.n=64 --set group=16"
TS="--time-shape 130x1536x8960 --time-shape 130x1536x64 --time-shape 100x2048x7168"
for c in "tile.m=136 stages=7 split_k=4" "tile.m=72 stages=12 split_k=2" "tile.m=104 stages=9 split_k=3" "tile.m=136 stages=7 split_k=5"; do
  a=$(set_args "$c")
  for v in flat l2 tree; do
    src=.; [ $v = tree ] && src=$TREE; [ $v = l2 ] && src=$L2
    # shellcheck disable=SC2086
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_flat_$v timeout 100 build/weft run examples/gemm.lua $S $a \
      --shape 1000x1000x1000 --shapes-only $TS --iters 30 > "$O/t.log" 2>&1
    cat "$O/t.log" >> "$O/time_$v.log"
    echo "== $v $c: $(grep -c PASS "$O/t.log") pass $(grep -c FAIL "$O/t.log") fail; $(grep -m1 "^launch" "$O/t.log")"
    gemm_run_rows "$O/t.log"
    grep -iE "error" "$O/t.log" | head -2 | cut -c1-200
  done
done
echo "== no sum at all (diag_gemm_bounds.sh nored: each CTA stores its own partial, unchecked): the floor any sum can reach"
OUT=$O/nored DIAG_KINDS="nored" DIAG_SHAPES="--time-shape 130x1536x8960 --time-shape 130x1536x64 --time-shape 100x2048x7168" \
  timeout 200 bash bench/diag_gemm_bounds.sh "${S//--set /} tile.m=136 stages=7 split_k=4" "${S//--set /} tile.m=104 stages=9 split_k=3" \
  > "$O/nored.log" 2>&1
gemm_run_rows "$O/nored.log"
echo "== the rule's picks (new: the flat sum in the model, RED_FLAT_US=${RED_FLAT_US:-1.5}; old: main's), WEFT_AUTO_TABLE=none"
NEW=/tmp/weft_flat_model; rm -rf "$NEW" && mkdir -p "$NEW" && cp -r gen templates "$NEW"/
sed -i "s|^  RED_FLAT_US = [^,]*,|  RED_FLAT_US = ${RED_FLAT_US:-1.5},|" "$NEW/gen/core/gemm.lua"
grep -q "^  RED_FLAT_US = [0-9]" "$NEW/gen/core/gemm.lua" || { echo "flat_probe.sh: RED_FLAT_US not set in the copy" >&2; exit 1; }
OLD_SRC=$TREE NEW_SRC=$NEW ITERS=50 OUT=$O SHAPES="${SHAPES:-130x1536x8960 100x2048x7168 200x3072x12288 96x2560x2560 224x1536x8960 160x3072x12288 72x4096x11008 200x2048x7168 128x4096x14336 256x4096x14336 64x14336x4096 16x4096x14336}" \
  bash bench/rule_probe.sh
