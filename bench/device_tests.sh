#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with build/ carried from the development
# machine: ctest's files hold absolute paths, so the tree is made visible at the path it was
# built at (WEFT_BUILT_AT, else the path build/CTestTestfile.cmake names).  Full logs go to $OUT.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
built_at=$(link_built_at "$(pwd)") || exit 1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
cd "$built_at/build" || exit 1
ctest -L gpu -j "${JOBS:-12}" --output-on-failure --timeout 300 "$@" 2>&1 | tee "$out/ctest_gpu.log" | tail -40
