#!/usr/bin/env bash
# bench/gemm_decode_sweep.sh: issue 19's decode sweep on the GPU machine (repo root, build
# carried).  1. what the GPU holds at once per split_k (the launch line of `weft run`); 2. the
# sweep bench/gemm_decode_sweep.lua with `weft tune` (check, then time beside cuBLASLt), into a
# fresh database under $OUT.  Logs and the CSV under $OUT.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
out=${OUT:-/tmp/out}
mkdir -p "$out"
W=${WEFT:-build/weft}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-build/cache}
: > "$out/coresident.txt"
for sk in 1 2 3 4 6 8; do
  for t in "tile.m=64 tile.n=128 consumers=1 stages=6" "tile.m=128 tile.n=128 stages=4"; do
    line=$($W run examples/gemm.lua $(set_args "$t split_k=$sk b_layout=col") --no-time --shapes-only \
           --shape 16x4096x4096 2>&1 | grep -E "^launch:|FAIL|error" | head -2)
    echo "split_k=$sk $t: $line" | tee -a "$out/coresident.txt"
  done
done
$W tune "$here/gemm_decode_sweep.lua" --jobs 16 --iters "${ITERS:-20}" --budget "${BUDGET:-400}" \
  --db "$out/decode.db" -o "$out" > "$out/tune.txt" 2>&1
echo "tune rc=$?"
tail -3 "$out/tune.txt"
