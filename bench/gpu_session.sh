#!/usr/bin/env bash
# bench/gpu_session.sh PART: one device call's worth of checks and timings, run from the repo root
# on the GPU machine with build/ carried from the development machine.  Full logs under $OUT; a
# short summary last.
#   a: every GPU test except the MPS ones (ctest -L gpu -LE mps), rmsnorm against torch and a
#      copy, and the examples' own timings (rows vs copy, the cluster primitive, gemm vs cuBLASLt)
#   b: the MPS tests (1..8 ranks sharing the GPU), and the allreduce at 2 ranks under MPS
set -u
part=${1:-a}
out=${OUT:-/tmp/out}
mkdir -p "$out"
. bench/env.sh
built_at=$(link_built_at "$(pwd)") || exit 1
cd "$built_at" || exit 1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-session-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
step() {   # step NAME SECONDS CMD...: one step, its log and exit status
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
}
case $part in
  a)
    (cd build && step ctest_gpu 330 ctest -L gpu -LE mps -j "${JOBS:-8}" --timeout 240 --output-on-failure)
    step rmsnorm_torch 120 python3 bench/rmsnorm_torch.py --iters 100
    for ex in row_softmax row_reduce cluster_reduce rmsnorm; do step "run_$ex" 40 build/weft run "examples/$ex.lua"; done
    step run_gemm 90 build/weft run examples/gemm.lua
    ;;
  b)
    . bench/mps.sh
    (cd build && step ctest_mps 420 ctest -L mps --timeout 240 --output-on-failure)
    step allreduce_np2 60 $MPIRUN -np 2 build/weft run examples/allreduce.lua --set algo=one_shot
    mps_stop
    ;;
esac
echo "== summary"; cat "$out/summary.txt"
grep -hE "tests passed|tests failed|\(Failed\)|Timeout" "$out"/ctest_*.log 2>/dev/null | tail -30
tail -12 "$out/rmsnorm_torch.log" 2>/dev/null
grep -hE "^(check|time):" "$out"/run_*.log 2>/dev/null | cut -c1-220
grep -hE "^ag_gemm |^ *[0-9]+ +[0-9]+ " "$out"/run_gemm.log "$out"/allreduce_np2.log 2>/dev/null | tail -30
