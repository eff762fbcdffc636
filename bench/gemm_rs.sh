#!/usr/bin/env bash
# bench/gemm_rs.sh: the fused GEMM + reduce-scatter (issue 20) on the GPU machine, repo root, build/ carried.
# FAMILY=gemm_ar: the same for GEMM + allreduce (unfused: weft's allreduce of M N elements; SETS adds
# --set options to the fused kernel, e.g. "--set comm=multimem --set fallback=emulate"; for gemm_rs
# SETS="--set fold=tiles" times the per-tile fold).
#   PHASES "tests time" (default):
#     tests  every GPU test of the family (MPS: P = 1, 2, 3, 4, 8; muted signals)
#     time   P = 1: the family with ranks = 1 (the plain epilogue) beside weft's gemm with the same schedule
#            (direct epilogue, the example's tile and stages; the runner times both), at SHAPES1 (default
#            1024^3, 4096^3, 8192^3);
#            P = RANKS (default "2 4 8") under MPS: the fused kernel beside the unfused sequence, which
#            the runner times in the same run (weft's gemm at M x N x K/P on every rank with the same
#            schedule, then weft's reduce_scatter of M N / P elements, or allreduce of M N), at 1024^3
#            and 8192^3 total (M x N x K with K cut over the ranks).
#   VARIANTS: the multi-rank cases once per variant, each a comma-separated list of key=value (or
#            "config": the example's with SETS), e.g. for gemm_rs
#            VARIANTS="config fold=tiles comm=tma reduce=atomic comm=multimem,fallback=emulate"
#            (atomic adds with TMA bulk reduce-adds into an M/P x N staging and is not bit-stable).
#   Logs under $OUT; the timing lines on stdout.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
out=${OUT:-/tmp/out}
mkdir -p "$out"
. "$here/mps.sh"
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
W=build/weft
FAM=${FAMILY:-gemm_rs}
GRS="$here/../examples/$FAM.lua"
SETS=${SETS:-}
for ph in ${PHASES:-tests time}; do
  case $ph in
    tests)
      (cd build && ctest -L gpu -R "$FAM" --output-on-failure --timeout 300) > "$out/${FAM}_tests.txt" 2>&1
      grep -E "tests passed|tests failed|\*\*\*Failed|Timeout" "$out/${FAM}_tests.txt" | head -20 ;;
    time)
      for s in ${SHAPES1:-1024x1024x1024 4096x4096x4096 8192x8192x8192}; do
        echo "== P=1 $s: $FAM ranks=1 $SETS; its gemm_* columns: weft's gemm with the same schedule (direct epilogue)"
        timeout 120 $W run "$GRS" $SETS --set ranks=1 --no-check --shapes-only --time-shape "$s" 2>&1 | grep -E "^#?gemm_|FAIL|rror"
      done
      for np in ${RANKS:-2 4 8}; do
        for t in 1024 8192; do
          k=$((t / np))
          for var in ${VARIANTS:-config}; do
            rs=; tag=
            if [ "$var" != config ]; then
              for kv in ${var//,/ }; do rs="$rs --set $kv"; done
              tag="_${var//[=,]/_}"
            fi
            echo "== P=$np ${t}^3 (k = $k per rank): fused $SETS $rs beside the unfused gemm + collective (the runner times both)"
            timeout 300 $MPIRUN -x WEFT_CACHE_DIR -np "$np" $W run "$GRS" $SETS $rs --set ranks="$np" --no-check \
              --shapes-only --time-shape "${t}x${t}x$k" > "$out/${FAM}${tag}_np${np}_$t.txt" 2>&1; echo "rc=$?"
            grep -E "^#?gemm_|FAIL|rror" "$out/${FAM}${tag}_np${np}_$t.txt"
          done
        done
      done ;;
  esac
done
mps_stop
