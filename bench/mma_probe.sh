#!/usr/bin/env bash
# bench/mma_probe.sh: one of family gemm's consumer schedules (MMA: "kturns", two consumer
# warpgroups taking turns along K on every tile; "pingpong", each taking whole tiles in turn --
# weft/gemm_kernel.cuh) on a GPU, in one device call (repo root; build/weft and build/python
# carried); logs under $OUT.  Without MMA, CHECK and EXTRAS: kturns' configs.
#   1. checked: `weft run` of each CHECK config at odd shapes (M = 1, 3, 17, 255; one k-block, so
#      one kturns warpgroup has none; 2048 x 1536 x 576, several tiles per CTA with 9 k-blocks
#      each, so kturns' first turns swap from tile to tile; 4096 x 4096 x 256, many tiles per CTA,
#      so pingpong's warpgroups hand over several times), random data, C poisoned, a double
#      reference, 20 launches bit-identical;
#   2. timed: bench/gemm_llm.sh at SHAPES, the rule's CANDIDATES (2) beside each EXTRA config,
#      ROUNDS rounds;
#   3. compute-sanitizer's racecheck and synccheck over two CHECK configs (the first and third, where there is one) at
#      255 x 1032 x 1000 and 2048 x 1536 x 576 (several tiles per CTA: kturns' hand-over buffer
#      reused); the cuBLASLt baseline `weft run` also launches is not weft's (its hazards are
#      listed apart).
#   4. timed against OTHER_SRC (a copy of gen/ and templates/, read through WEFT_SOURCE_DIR):
#      bench/src_ab.sh over this tree and the copy, each CHECK config checked at 255 x 1032 x 1000
#      first, then timed at TIME_SHAPES in turn (50 launches, beside cuBLASLt), ROUNDS (3) rounds,
#      the medians tabled.
#   CHECK: "k=v ...;..." (over examples/gemm.lua, b_layout=col unless a config says otherwise)
#   EXTRAS: "k=v,k=v ...;..." (gemm_llm.py --extra), SHAPES, DTYPE (bf16), ROUNDS (6),
#   GEMM_BUDGET (200), STEPS ("1 2"; 3 on request), WEFT (build/weft), SANITIZER (compute-sanitizer)
set -u
set -f   # (config words are split into --set pairs, never globbed)
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
MMA=${MMA:-kturns}
# the defaults are kturns' configs (swapped and thin tiles): another MMA names its own, CHECK for
# the steps that run configs (1, 3, 4), EXTRAS for the timed one (2)
if [ "$MMA" != kturns ]; then
  for s in ${STEPS:-1 2}; do
    case $s in
      1|3|4) [ -n "${CHECK:-}" ] || { echo "mma_probe.sh: MMA=$MMA: step $s needs CHECK (the default configs are kturns')" >&2; exit 2; } ;;
      2) [ -n "${EXTRAS:-}" ] || { echo "mma_probe.sh: MMA=$MMA: step 2 needs EXTRAS (the default configs are kturns')" >&2; exit 2; } ;;
    esac
  done
fi
OUT=${OUT:-/tmp/$MMA}
mkdir -p "$OUT" || exit 1
IFS=';' read -r -a CHECKS <<<"${CHECK:-swap_ab=true tile.m=56 tile.n=64 stages=14 epilogue=direct pdl=true;\
swap_ab=true tile.m=104 tile.n=64 stages=8 cluster.n=2 epilogue=direct;\
tile.m=64 tile.n=48 stages=10 epilogue=tma pdl=true;\
tile.m=16 tile.n=128 stages=8 epilogue=direct;\
b_layout=row tile.m=64 tile.n=192 stages=4 epilogue=tma;\
b_layout=row tile.m=128 tile.n=64 stages=6 cluster.m=2 epilogue=tma;\
dtype=f16 swap_ab=true tile.m=192 tile.n=64 stages=4 epilogue=direct}"
IFS=';' read -r -a EXTRA <<<"${EXTRAS:-swap_ab=true,tile.m=56,tile.n=64,stages=14,epilogue=direct,pdl=true;\
swap_ab=true,tile.m=64,tile.n=64,stages=14,epilogue=direct,pdl=true;\
tile.m=64,tile.n=32,stages=12,epilogue=tma,pdl=true;\
tile.m=64,tile.n=48,stages=10,epilogue=tma,pdl=true;\
tile.m=64,tile.n=64,stages=10,epilogue=tma,pdl=true;\
tile.m=128,tile.n=64,stages=6,epilogue=tma,pdl=true}"
for s in ${STEPS:-1 2}; do
  case $s in
    1) i=0
       for c in "${CHECKS[@]}"; do
         i=$((i + 1))
         # shellcheck disable=SC2046
         WEFT_CACHE_DIR="$OUT/cache" "${WEFT:-build/weft}" run examples/gemm.lua --set b_layout=col \
           $(set_args "mma=$MMA consumers=2 $c") --no-time --shapes-only --shape 1x1000x520 --shape 3x1032x1000 \
           --shape 17x1000x64 --shape 255x1032x1000 --shape 1000x1000x1000 --shape 2048x1536x576 \
           --shape 4096x4096x256 > "$OUT/check_$i.txt" 2>&1
         echo "== check $i ($c): rc $? | $(grep -c PASS "$OUT/check_$i.txt") PASS, $(grep -c FAIL "$OUT/check_$i.txt") FAIL"
       done ;;
    2) args=()
       for e in "${EXTRA[@]}"; do args+=(--extra "mma=$MMA,consumers=2,$e"); done
       OUT="$OUT/timed" GEMM_BUDGET=${GEMM_BUDGET:-200} bash "$here/gemm_llm.sh" \
         --shapes "${SHAPES:-224x1536x8960,200x2048x7168,640x2048x7168,64x6144x4096,64x4096x14336,128x4096x14336,128x4096x4096}" \
         --dtype "${DTYPE:-bf16}" --candidates "${CANDIDATES:-2}" --rounds "${ROUNDS:-6}" "${args[@]}" > "$OUT/timed.txt" 2>&1
       echo "== timed: rc $?"
       tail -30 "$OUT/timed/gemm_llm.log" 2>/dev/null ;;
    3) cs=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
       for i in 0 2; do
         [ $i -lt ${#CHECKS[@]} ] || continue   # (CHECK of one or two configs: the first alone)
         for tool in racecheck synccheck; do
           log="$OUT/$tool.$i.txt"
           # shellcheck disable=SC2046
           WEFT_CACHE_DIR="$OUT/cache" timeout 200 "$cs" --tool "$tool" --print-limit 10 "${WEFT:-build/weft}" run \
             examples/gemm.lua --set b_layout=col $(set_args "mma=$MMA consumers=2 ${CHECKS[$i]}") --no-time \
             --shapes-only --shape 255x1032x1000 --shape 2048x1536x576 > "$log" 2>&1
           echo "== $tool (${CHECKS[$i]}): rc $? | $(grep -c PASS "$log") PASS | weft's kernels: $(grep -c 'Race reported.* weft\|Error.*weft_gemm\|at weft::' "$log") report line(s) | $(grep 'SUMMARY' "$log" | tr '\n' ' ')"
         done
       done ;;
    4) [ -f "${OTHER_SRC:-}/templates/weft/gemm_mainloop.cuh" ] ||
         { echo "mma_probe.sh: step 4: OTHER_SRC='${OTHER_SRC:-}' holds no copy of gen/ and templates/" >&2; exit 2; }
       cfgs=""
       for c in "${CHECKS[@]}"; do cfgs="$cfgs${cfgs:+;}b_layout=col mma=$MMA consumers=2 $c"; done
       SRCS=". $OTHER_SRC" CFGS="$cfgs" SHAPES="${TIME_SHAPES:-224x1536x8960 2048x1536x576}" ROUNDS="${ROUNDS:-3}" \
         ITERS=50 CHECK_SHAPE=255x1032x1000 OUT="$OUT/ab" WEFT="${WEFT:-build/weft}" bash "$here/src_ab.sh" ;;
    *) echo "mma_probe.sh: STEPS: no step '$s' (1 2 3 4)" >&2; exit 2 ;;
  esac
done
