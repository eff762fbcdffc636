#!/usr/bin/env bash
# The tests: set up, then run ctest.  Without a GPU the GPU tests report SKIP (not pass).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
