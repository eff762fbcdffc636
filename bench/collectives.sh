#!/usr/bin/env bash
# bench/collectives.sh: reduce_scatter and all_gather beside the allreduce, on P ranks sharing the
# one GPU under MPS (P = 2, 4, 8; NPS="..." to change).  Latency and bandwidth for chunks of 8 B ..
# 32 MB (the P chunks: up to 256 MB per rank at P = 8), threadload and the emulated multimem twin;
# the allreduce at the same per-rank bytes for the table beside them.
# Each `weft run` times its baseline in the same run: NCCL's ncclReduceScatter / ncclAllGather
# where every rank has a GPU of its own (MULTI_GPU=1: one rank per GPU, no MPS); under MPS NCCL
# refuses ranks that share a GPU (the log says so) and every rank copying its input is the floor.
# On one GPU this measures the protocol's cost and the memory traffic, not NVLink.  The kernels are
# generated for the world size (ranks = P, as the rule does); ANY=1 times the ranks = "any" ones.
# Full logs under $OUT (default /tmp/out); a short summary last.
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
if [ "${MULTI_GPU:-0}" = 1 ]; then
  . bench/env.sh
  export WEFT_NCCL_LIB=${WEFT_NCCL_LIB:-$(nccl_lib_default)}
  MPIRUN="$MPIRUN -x WEFT_NCCL_LIB"
  mps_stop() { :; }
else
  . bench/mps.sh
fi
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-bench-cache}
W=build/weft
DT=${DT:-f32}
for np in ${NPS:-2 4 8}; do
  for fam in reduce_scatter all_gather; do
    for comm in threadload multimem; do
      case $comm in
        multimem) sets="--set comm=multimem --set fallback=emulate" ;;
        *) sets="" ;;
      esac
      [ "${ANY:-0}" = 1 ] || sets="$sets --set ranks=$np"   # the rule's kernel: generated for the world size
      log=$out/${fam}_${DT}_${comm}_np${np}.log
      timeout 300 $MPIRUN -np $np $W run examples/$fam.lua --set dtype=$DT $sets --no-check --iters ${ITERS:-20} >"$log" 2>&1
      echo "rc=$?" >>"$log"
    done
  done
  # the allreduce beside them (its own sizes: 8 B .. 256 MB per rank)
  log=$out/allreduce_${DT}_np${np}.log
  timeout 300 $MPIRUN -np $np $W run examples/allreduce.lua --set dtype=$DT --no-check --iters ${ITERS:-20} >"$log" 2>&1
  echo "rc=$?" >>"$log"
done
mps_stop
# summary: per config the baseline line, then the rows at 8 B, 32 KB and 32 MB chunks (bytes = P chunks)
for f in "$out"/reduce_scatter_*.log "$out"/all_gather_*.log "$out"/allreduce_*.log; do
  [ -e "$f" ] || continue
  echo "== $(basename "$f" .log)"
  grep -E "^baseline:|^ +bytes" "$f"
  np=$(basename "$f" .log | sed 's/.*_np//')
  es=$( [ "$DT" = f32 ] && echo 4 || echo 2 )
  for chunk in 8 32768 33554432; do
    grep -E "^ +[0-9]+ +$((chunk / es)) " "$f" | head -1
  done
  grep -E "^rc=" "$f"
done
