#!/usr/bin/env bash
# bench/dual_acc_probe.sh: does one consumer warpgroup gain from two accumulator sets (even
# k-blocks into one, odd into the other, added after the loop), so that a k-block's WGMMAs do not
# wait on the previous one's accumulators?  cuBLASLt's kernel at 224 x 1536 x 8960 runs the
# same 56 x 64 swapped tile with two consumer warpgroups taking turns along K (thirty-fifth
# session, ncu); weft's, one consumer, drove the tensor pipe 25 % against its 35 %.  A copy of
# gen/ and templates/ with weft/gemm_mainloop.cuh's main loop so changed (through
# WEFT_SOURCE_DIR), each config run both ways with `weft run`: checked at odd shapes (random data,
# C poisoned, a double reference), then timed beside cuBLASLt in the same process.  One device call
# (repo root, build/ carried); logs under $OUT.
#   CONFIGS: "SHAPE k=v ...;..." (the timed shape, then the config over examples/gemm.lua)
#   DRY=1: no GPU: only build each config from the changed copy (weft build: its registers, and
#   ptxas's warning if the two accumulator sets serialised the WGMMAs) -- ctest bench.dual_acc_probe_dry
#   WEFT: the CLI (build/weft)
set -u
set -f   # (CONFIGS' words are split into --set pairs, never globbed)
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
OUT=${OUT:-/tmp/dual_acc}
mkdir -p "$OUT" || exit 1
src=$(mktemp -d /tmp/weft-dual-XXXXXX) || exit 1
trap 'rm -rf "$src"' EXIT
cp -r gen templates tune "$src"/ || exit 1   # (tune/: the shipped tables, as in the tree)
python3 - "$src/templates/weft/gemm_mainloop.cuh" <<'PY' || exit 1
import sys
p = sys.argv[1]
s = open(p).read()
old = """    consume_kblock<Cfg, MR>(acc, smem_addr(ring.a(p.s)), smem_addr(ring.b(p.s)) + b_off, row0, kb == kb0);"""
new = """    if (((kb - kb0) & 1) == 0) consume_kblock<Cfg, MR>(acc, smem_addr(ring.a(p.s)), smem_addr(ring.b(p.s)) + b_off, row0, kb == kb0);
    else consume_kblock<Cfg, MR>(acc2, smem_addr(ring.a(p.s)), smem_addr(ring.b(p.s)) + b_off, row0, kb == kb0 + 1);"""
assert s.count(old) == 1, "gemm_mainloop.cuh: the main loop's consume_kblock call moved"
s = s.replace(old, new)
old = """  int prev = -1;
  for (int kb = kb0; kb < kb1; kb += STEP) {"""
assert s.count(old) == 1, "gemm_mainloop.cuh: the main loop's head moved"
s = s.replace(old, "  int prev = -1;\n  float acc2[MR][Cfg::ACC_N / 2];   // (written first by k-block kb0 + 1: no other definition)\n"
              "  for (int kb = kb0; kb < kb1; kb += STEP) {")
old = """    p.next();
    if constexpr (STEP == 2) p.next();
  }
  return prev;"""
assert s.count(old) == 1, "gemm_mainloop.cuh: the main loop's end moved"
s = s.replace(old, """    p.next();
    if constexpr (STEP == 2) p.next();
  }
  wgmma_wait<0>();
  if (kb1 - kb0 >= 2) {   // (both sets pinned after the wait, as mainloop_drain pins acc: no add moves above it)
#pragma unroll
    for (int mi = 0; mi < MR; ++mi)
#pragma unroll
      for (int q = 0; q < Cfg::ACC_N / 2; ++q) {
        fence_reg(acc[mi][q]);
        fence_reg(acc2[mi][q]);
        acc[mi][q] += acc2[mi][q];
      }
  }
  return prev;""")
open(p, "w").write(s)
PY
IFS=';' read -r -a CFGS <<<"${CONFIGS:-224x1536x8960 swap_ab=true tile.m=56 tile.n=64 consumers=1 stages=14 epilogue=direct pdl=true;\
224x1536x8960 swap_ab=true tile.m=112 tile.n=64 consumers=1 stages=8 split_k=2 epilogue=direct pdl=true;\
200x2048x7168 swap_ab=true tile.m=104 tile.n=64 consumers=1 stages=9 split_k=2 epilogue=direct pdl=true;\
64x4096x14336 tile.m=64 tile.n=64 consumers=1 stages=8 split_k=2 epilogue=tma pdl=true;\
64x6144x4096 tile.m=64 tile.n=96 consumers=1 stages=8 split_k=2 epilogue=tma pdl=true;\
128x4096x4096 tile.m=64 tile.n=64 consumers=1 stages=8 epilogue=tma pdl=true}"
i=0
for c in "${CFGS[@]}"; do
  i=$((i + 1))
  read -r shp rest <<<"$c"
  if [ "${DRY:-0}" = 1 ]; then
    # shellcheck disable=SC2046
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR="$OUT/cache" "${WEFT:-build/weft}" build examples/gemm.lua --set b_layout=col $(set_args "$rest") \
      -o "$OUT/build_$i" > "$OUT/build_$i.txt" 2>&1
    echo "== $i built ($rest): rc $? | $(grep -o 'registers [0-9]*, .*spill loads [0-9]* bytes' "$OUT/build_$i.txt") |$(grep -o 'wgmma.mma_async instructions are serialized' "$OUT/build_$i.txt")"
    continue
  fi
  for way in one two; do
    if [ $way = two ]; then export WEFT_SOURCE_DIR=$src; else unset WEFT_SOURCE_DIR; fi
    # shellcheck disable=SC2046
    WEFT_CACHE_DIR=/tmp/weft-dual-cache-$way "${WEFT:-build/weft}" run examples/gemm.lua --set b_layout=col $(set_args "$rest") \
      --shapes-only --shape 3x1000x520 --shape 255x1032x1000 --shape 17x1000x64 --time-shape "$shp" --iters 50 \
      > "$OUT/run_${i}_$way.txt" 2>&1
    echo "== $i $way ($c): rc $? | $(grep -cE 'PASS' "$OUT/run_${i}_$way.txt") PASS, $(grep -cE 'FAIL' "$OUT/run_${i}_$way.txt") FAIL | $(grep -E '^ag_gemm ' "$OUT/run_${i}_$way.txt" | tail -1)"
  done
done
