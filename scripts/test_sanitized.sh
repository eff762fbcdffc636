#!/usr/bin/env bash
# The host-side tests again, built with AddressSanitizer and UndefinedBehaviorSanitizer (CI runs
# it after scripts/test.sh): the library, the CLI and the tests, with every overflow, use after
# free or undefined operation an error.  Leak checks are off: NVRTC and Open MPI keep memory to
# the end by design.  GPU tests are left out (they SKIP here anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cuda_root=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCUDAToolkit_ROOT="$cuda_root" -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > build-asan.log 2>&1 || { cat build-asan.log; exit 1; }
cmake --build build-asan -j "$(nproc)" >> build-asan.log 2>&1 || { tail -50 build-asan.log; exit 1; }
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
cd build-asan
ctest --output-on-failure -j "$(nproc)" -R '^(host|lua|fails|cli|compile)\.' "$@"
