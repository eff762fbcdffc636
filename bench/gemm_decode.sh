#!/usr/bin/env bash
# bench/gemm_decode.sh: issue 19's first GPU pass, on the GPU machine from the repo root with the
# build carried (bench/device_tests.sh's conventions).  1. the GEMM's GPU and MPS tests (the
# split-K and decode-grid ones among them); 2. decode-sized shapes timed beside cuBLASLt, for
# several schedules each (`weft run --time-shape`, events and graph replay).  Logs under $OUT.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
out=${OUT:-/tmp/out}
mkdir -p "$out"
W=${WEFT:-build/weft}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  JOBS=${JOBS:-8} bash "$here/device_tests.sh" -R "gpu\.gemm|gpu\.example" > "$out/tests_gpu.txt" 2>&1
  tail -5 "$out/tests_gpu.txt"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d
  (cd build && ctest -R "mps\.ag_fused_(split_k|threadload\.np[12]|epilogue_tma|cluster_n2\.)" -j 2 --output-on-failure \
     --timeout 300) > "$out/tests_mps.txt" 2>&1
  echo quit | nvidia-cuda-mps-control
  tail -5 "$out/tests_mps.txt"
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
# shapes: M x N x K, B column-major (a linear layer's weight)
SHAPES=${SHAPES:-"1x14336x4096 16x14336x4096 64x14336x4096 16x4096x14336 64x4096x14336 16x6144x4096 16x4096x4096 128x4096x4096 256x14336x4096 16x10240x8192 16x8192x28672"}
CONFIGS=${CONFIGS:-"tile.m=64,tile.n=128,consumers=1,stages=6
tile.m=64,tile.n=128,consumers=1,stages=6,split_k=2
tile.m=64,tile.n=128,consumers=1,stages=6,split_k=4
tile.m=64,tile.n=256,consumers=1,stages=4
tile.m=64,tile.n=64,consumers=1,stages=8,split_k=2
tile.m=128,tile.n=128,stages=4,split_k=2"}
: > "$out/decode.txt"
for s in $SHAPES; do
  for c in $CONFIGS; do
    args=$(set_args "b_layout=col epilogue=tma ${c//,/ }")
    $W run examples/gemm.lua $args --no-check --shapes-only --time-shape "$s" --iters 50 > "$out/run.log" 2>&1
    rc=$?
    row=$(grep "^ag_gemm " "$out/run.log" | tail -1)
    echo "$s | $c | rc=$rc | $row" | tee -a "$out/decode.txt"
    [ $rc = 0 ] || tail -3 "$out/run.log" >> "$out/decode.txt"
  done
done
tar czf "$out/logs.tgz" -C "$out" . 2>/dev/null || true
