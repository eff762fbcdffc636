#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over one config of each family
# and mode, at odd sizes, on the GPU machine.  Full logs to $OUT/sanitize.log; a summary last.
set -u
W=${WEFT:-build/weft}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-sanitize-cache}
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
log=${OUT:-/tmp}/sanitize.log
: > "$log"
runs=(
  "examples/row_reduce.lua --set cluster=4 --rows 7 --cols 10001"
  "examples/row_reduce.lua --set cluster=2 --set persistent=true --set dtype=bf16 --rows 301 --cols 1001"
  "examples/row_softmax.lua --set cluster=4 --set max_cols=20000 --rows 5 --cols 19999"
  "examples/row_softmax.lua --set mode=tma --set cluster=2 --set max_cols=20000 --set persistent=true --rows 301 --cols 19999"
  "examples/row_softmax_stream.lua --set cluster=2 --set persistent=true --rows 301 --cols 3001"
  "examples/cluster_reduce.lua --clusters 20"
  "examples/cluster_reduce.lua --set need_tail_sync=true --set cluster=8 --clusters 20"
  "examples/cluster_reduce.lua --set exchange=push --set cluster=8 --clusters 20"
  "examples/row_softmax.lua --set exchange=push --set cluster=4 --set max_cols=20000 --set persistent=true --rows 301 --cols 19999"
  "examples/row_reduce.lua --set exchange=push --set cluster=2 --set dtype=bf16 --rows 301 --cols 1001"
)
printf '%-10s %-6s %s\n' tool rc config > "$log.summary"
for tool in memcheck racecheck synccheck initcheck; do
  for r in "${runs[@]}"; do
    echo "=== $tool: $r" >> "$log"
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 $W run $r --no-time >> "$log" 2>&1
    rc=$?
    printf '%-10s %-6s %s\n' "$tool" "$rc" "$r" >> "$log.summary"
  done
done
cat "$log.summary"
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error" "$log" | sort | uniq -c | head -20
