#!/bin/bash
# bench/torch_dist_session.sh [tests|bench|all] [BUILD]: weft.torch's comm ops on the GPU machine,
# N ranks sharing the GPU(s) under MPS.  Starts the MPS daemon (DEVICE.md's recipe, in a private pipe
# folder), runs tests/python/dist/run.sh for N = 1, 2, 4 (and 8: WEFT_NPS overrides the list), then
# bench/torch_comm.py at N = 2 and 4 (WEFT_BENCH_NPS), writes every log and summary.txt under $OUT
# (default ./torch_dist_out), and stops the daemon on exit.  Each stage fits one 10-minute call:
#   bash bench/torch_dist_session.sh tests ; bash bench/torch_dist_session.sh bench
# Stage arn (not in all): bench/arn_torch.py, all_reduce_rms_norm against NCCL (one rank per GPU) and
# weft's allreduce, each followed by torch's add and rms_norm, at N = WEFT_BENCH_NPS.
# Stage mrs (not in all): bench/mrs_torch.py, matmul_reduce_scatter fused / unfused / auto against
# torch.matmul + NCCL's reduce_scatter_tensor and torch's fused_matmul_reduce_scatter (one rank per
# GPU; left out under MPS), at N = WEFT_BENCH_NPS; WEFT_MRS_SHAPES picks the shapes.
# The package: BUILD/python (the weft_python target: the .py files beside libweft.so.0), else
# python/ with WEFT_LIB (default BUILD/libweft.so.0).  Exit: non-zero if any test failed.
set -u
STAGE=${1:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${2:-$ROOT/build}
OUT=${OUT:-$ROOT/torch_dist_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -f "$BUILD/python/weft/__init__.py" ]; then
  export PYTHONPATH=$BUILD/python
else
  export PYTHONPATH=$ROOT/python WEFT_LIB=${WEFT_LIB:-$BUILD/libweft.so.0}
fi
export PYTHONDONTWRITEBYTECODE=1 WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-torchdist-cache}
# never multicast here (DEVICE.md): set for every child process
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 WEFT_MULTICAST=0
# WEFT_NO_MPS=1: no daemon (a GPU per rank: bench/multi_gpu_session.sh)
if [ "${WEFT_NO_MPS:-0}" = 1 ]; then
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-weft-torchdist CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog-weft-torchdist
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "torch_dist_session: cannot start the MPS daemon" | tee -a "$OUT/summary.txt"; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control; cp -r "$CUDA_MPS_LOG_DIRECTORY" "$OUT/mpslog" 2> /dev/null' EXIT
fi
PY=${WEFT_TORCH_PYTHON:-python3}
echo "== $(date -u +%FT%TZ) stage $STAGE, PYTHONPATH=$PYTHONPATH WEFT_LIB=${WEFT_LIB:-}" | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader >> "$OUT/summary.txt" 2>&1
bad=0
if [ "$STAGE" = tests ] || [ "$STAGE" = all ]; then
  for np in ${WEFT_NPS:-1 2 4 8}; do
    # 8 ranks: the quick matrix (fewer sizes, 10 replays) to stay within the call's limit
    q=0; [ "$np" -ge 8 ] && q=1
    start=$(date +%s)
    WEFT_TEST_QUICK=${WEFT_TEST_QUICK:-$q} WEFT_TEST_TIMEOUT_S=${WEFT_TEST_TIMEOUT_S:-200} \
      bash "$ROOT/tests/python/dist/run.sh" "$np" > "$OUT/test_np$np.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && bad=1
    echo "test np=$np: exit $rc in $(( $(date +%s) - start )) s; $(grep -h 'test_comm: P=' "$OUT/test_np$np.log" | tail -1);" \
         "$(grep -c 'FAIL ' "$OUT/test_np$np.log") FAIL lines" | tee -a "$OUT/summary.txt"
  done
fi
# one torchrun per rank count: bench/SCRIPT's table rows (and FAIL lines) into the summary
run_stage() {   # name script
  for np in ${WEFT_BENCH_NPS:-2 4}; do
    timeout -k 20 ${WEFT_BENCH_TIMEOUT_S:-280} "$PY" -m torch.distributed.run --standalone --nproc-per-node "$np" \
      "$ROOT/bench/$2" > "$OUT/$1_np$np.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && bad=1
    echo "$1 np=$np: exit $rc" | tee -a "$OUT/summary.txt"
    grep -E '^(\||##|FAIL)' "$OUT/$1_np$np.log" | tee -a "$OUT/summary.txt"
  done
}
if [ "$STAGE" = bench ] || [ "$STAGE" = all ]; then run_stage bench torch_comm.py; fi
# bench/arn_torch.py: the fused op against NCCL (or weft's allreduce) + torch's add, rms_norm
if [ "$STAGE" = arn ]; then run_stage arn arn_torch.py; fi
# bench/mrs_torch.py: GEMM + reduce-scatter, fused and not, against torch + NCCL
if [ "$STAGE" = mrs ]; then run_stage mrs mrs_torch.py; fi
exit $bad
