#!/usr/bin/env bash
# weft.torch's single-GPU ops on the GPU machine, in one go: build, the CI config test, the GPU
# tests (tests/python/gpu/run.py: every op against torch in float64, opcheck, torch.compile,
# CUDA graph replay, errors), the ctest entries, then bench/torch_ops.py (host overhead and
# device time beside torch).  Logs go under $OUT (default /tmp/weft_torch).  Run from the repo root:
#   OUT=$OUT bash bench/torch_session.sh            (PY=... picks the Python that has torch)
set -u
OUT=${OUT:-/tmp/weft_torch}
PY=${PY:-python3}
mkdir -p "$OUT"
status=0
step() { echo "== $1: rc $2" | tee -a "$OUT/summary.txt"; [ "$2" = 0 ] || status=1; }

if [ ! -d build ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT=/usr/local/cuda > "$OUT/build.log" 2>&1
fi
cmake --build build -j"$(nproc)" >> "$OUT/build.log" 2>&1
step build $?

export PYTHONPATH=$PWD/build/python PYTHONDONTWRITEBYTECODE=1   # the build's package, libweft.so.0 inside
if [ ! -f build/python/weft/libweft.so.0 ] || [ ! -f build/python/weft/torch/ops.py ]; then
  echo "build/python/weft lacks libweft.so.0 or torch/ops.py (target weft_python)" | tee -a "$OUT/summary.txt"
  exit 1
fi
{ nvidia-smi -L; "$PY" -c "import torch, sys; print(sys.executable, 'torch', torch.__version__, torch.version.cuda)"; } \
  > "$OUT/env.log" 2>&1

"$PY" -m pytest -q tests/python/test_torch_configs.py > "$OUT/torch_configs.log" 2>&1
step "test_torch_configs (CI rules, compiled)" $?

"$PY" tests/python/gpu/run.py > "$OUT/torch_ops_tests.log" 2>&1
step "tests/python/gpu/run.py (GPU tests; 77 = skipped)" $?

(cd build && ctest -N -R torch && ctest -R python.torch_configs --output-on-failure) > "$OUT/ctest_torch.log" 2>&1
step "ctest: torch entries registered, python.torch_configs" $?

"$PY" bench/torch_ops.py --iters 100 --profile > "$OUT/torch_ops_bench.log" 2>&1
step "bench/torch_ops.py" $?

cat "$OUT/summary.txt"
tail -n 30 "$OUT/torch_ops_tests.log"
exit $status
