#!/usr/bin/env bash
# bench/allreduce.sh: the allreduce family on P ranks sharing the one GPU under MPS.
# Latency and bandwidth from 8 B to 256 MB per rank for one_shot, two_shot and the emulated
# multimem twin, at P = 2, 4, 8; then compute-sanitizer on a 2-rank run.  On one GPU this
# measures the protocol's cost and the memory traffic of each algorithm, not NVLink.
# Full logs under $OUT (default /tmp/out); a short summary last.
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
. bench/mps.sh
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-bench-cache}
W=build/weft
AR=examples/allreduce.lua
DT=${DT:-f32}
for np in ${NPS:-2 4 8}; do
  for algo in one_shot two_shot multimem; do
    case $algo in
      multimem) sets="--set algo=two_shot --set comm=multimem --set fallback=emulate" ;;
      *) sets="--set algo=$algo" ;;
    esac
    log=$out/allreduce_${DT}_${algo}_np${np}.log
    timeout 300 $MPIRUN -np $np $W run $AR --set dtype=$DT $sets --no-check --iters ${ITERS:-20} >"$log" 2>&1
    echo "rc=$?" >>"$log"
  done
done
if [ -z "${NO_SANITIZER:-}" ]; then
  for tool in memcheck racecheck synccheck; do
    timeout 300 $MPIRUN -np 2 compute-sanitizer --tool $tool --error-exitcode 9 $W run $AR --set algo=two_shot \
      --no-time --elems 4097 >"$out/sanitize_$tool.log" 2>&1
    echo "rc=$?" >>"$out/sanitize_$tool.log"
  done
fi
mps_stop
# summary: per config, the smallest and largest message, and 1 MB
for f in "$out"/allreduce_*.log; do
  echo "== $(basename "$f" .log)"
  grep -E "^ +(8|1048576|268435456) " "$f" || tail -3 "$f"
done
for f in "$out"/sanitize_*.log; do [ -e "$f" ] && { echo "== $(basename "$f" .log)"; grep -E "ERROR SUMMARY|rc=|error" "$f" | head -4; }; done
