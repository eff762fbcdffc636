#!/usr/bin/env bash
# stream-K with small swapped tiles at the off-set shapes (M = 72-224, N = 1536-4096), beside the
# rule's pick (run --auto, WEFT_AUTO_TABLE=none) and cuBLASLt in the same process.  Run once
# (seventeenth session, bench/RESULTS.md): slower than the rule's pick at every shape.
set -u
. bench/env.sh
O=${OUT:-/tmp/out}; mkdir -p "$O"
SH=${SHAPES:-130x1536x8960 200x3072x12288 100x2048x7168 72x4096x11008 224x1536x8960 96x2560x2560 160x3072x12288 200x2048x7168 128x4096x14336 256x4096x14336}
ts=""; for s in $SH; do ts="$ts --time-shape $s"; done
B="--set b_layout=col --set swap_ab=true --set epilogue=direct --set consumers=1 --set tile.n=64 --set group=16 --set stream_k=true"
row() { awk -v tag="$1" '$1=="ag_gemm"{printf "%-16s %sx%sx%s weft_gr %s cublas_gr %s ratio %s %s\n", tag, $5, $6, $7, $11, $15, $19, $NF}'; }
printf 'return { family = "gemm", dtype = "bf16", b_layout = "col" }\n' > /tmp/g.lua
WEFT_AUTO_TABLE=none timeout 200 build/weft run /tmp/g.lua --auto --shapes-only $ts --iters 50 > "$O/auto.log" 2>&1
grep -E "^auto|^ag_gemm|FAIL" "$O/auto.log" | sed 's/^/  /' | cut -c1-220
row rule < "$O/auto.log"
for tm in ${TMS:-40:16 48:14 56:13 72:12 104:10}; do
  m=${tm%:*} st=${tm#*:}
  timeout 120 build/weft run examples/gemm.lua $B --set tile.m=$m --set stages=$st --shape 1000x1000x1000 --shapes-only $ts --iters 50 \
    > "$O/sk_$m.log" 2>&1
  grep -E "check: .*(PASS|FAIL)|rror" "$O/sk_$m.log" | head -2 | cut -c1-160
  row "sk swap ${m}x64" < "$O/sk_$m.log"
done
