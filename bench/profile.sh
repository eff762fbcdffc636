#!/usr/bin/env bash
# ncu (clocks left alone) over one launch of a few row_softmax configs: speed of light,
# occupancy, warp states.  Usage: bench/profile.sh ["--set ..." ...]; reports under $OUT.
set -u
W=${WEFT:-build/weft}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-profile-cache}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
i=0
for cfg in "$@"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:weft_ \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis \
      $W run $cfg --no-check --iters 1 > "${OUT:-/tmp}/ncu_$i.txt" 2>&1
  echo "=== $cfg"
  grep -E "Memory Throughput|DRAM Throughput|Duration|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|Block Limit" "${OUT:-/tmp}/ncu_$i.txt" | head -16
done
