#!/usr/bin/env bash
# bench/gemm_session.sh: issue 19's GPU session in one device call (repo root, build/ carried:
# the CLI, its ctest files, and build/python).  1. the GEMM's GPU tests and the fused kernel's
# MPS tests; 2. bench/gemm_llm.sh on the published set, bf16 then f16, every checked candidate
# stored in one tuning database ($OUT/llm.db: `weft export-table --db` makes the table rows).
#   PHASES  "tests bf16 f16" (default: all three); GEMM_BUDGET per dtype (default 200 s)
set -u
here=$(dirname "${BASH_SOURCE[0]}")
out=${OUT:-/tmp/out}
mkdir -p "$out"
phases=${PHASES:-tests bf16 f16}
for ph in $phases; do
  case $ph in
    tests)
      JOBS=8 bash "$here/device_tests.sh" -R "gpu\.gemm|gpu\.example" > "$out/tests_gpu.txt" 2>&1
      tail -4 "$out/tests_gpu.txt"
      . "$here/env.sh"
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
      mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
      nvidia-cuda-mps-control -d
      (cd build && ctest -R "mps\.ag_fused" -j 2 --output-on-failure --timeout 300) > "$out/tests_mps.txt" 2>&1
      echo quit | nvidia-cuda-mps-control
      tail -4 "$out/tests_mps.txt"
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
    bf16|f16)
      OUT=$out/$ph GEMM_BUDGET=${GEMM_BUDGET:-200} bash "$here/gemm_llm.sh" --dtype "$ph" --candidates "${CANDIDATES:-10}" \
        --record-db "$out/llm.db" > "$out/$ph.txt" 2>&1
      echo "== $ph: rc $?"; grep -E "^best/cuBLASLt|^auto/cuBLASLt|FAILED|shapes run" "$out/$ph.txt" | cut -c1-200 ;;
  esac
done
