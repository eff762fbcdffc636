#!/usr/bin/env bash
# tests/cli/tune_sigterm.sh WEFT TMP: SIGTERM (timeout, kill, a cancelled job) stops `weft tune` as
# Ctrl-C does -- it says so, exits 1, and what it printed reaches a redirected stdout (killed
# outright, the fully buffered output was lost) -- and a second SIGTERM stops it at once.
set -u
weft=$1 tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp" && cd "$tmp" || exit 1
cat > sweep.lua <<'LUA'
return { base = { family = "row_reduce", dtype = "f32", op = "sum" },
  space = { threads = { 64, 128, 256, 512, 1024 }, unroll = { 1, 2, 4, 8 }, cluster = { 1, 2, 4, 8 } },
  shapes = { { rows = 64, cols = 65536 } } }
LUA
bad=0
# (the signal goes once a compile has landed in the cache: the handler is set before compiling starts)
compiling() {
  for _ in $(seq 200); do
    ls "$1"/*/*.bin > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "FAIL: nothing compiled within 20 s"
  return 1
}
# one SIGTERM during the compiles (80 kernels on one thread take several seconds)
WEFT_CACHE_DIR=$tmp/cache1 "$weft" tune sweep.lua --fake-timing --jobs 1 --db "$tmp/db1" -o out1 > log1 2>&1 &
pid=$!
compiling "$tmp/cache1" || bad=1
kill -TERM $pid
wait $pid
rc=$?
grep -q "^sweep sweep.lua: family row_reduce" log1 && grep -q "interrupted while compiling" log1 && [ $rc = 1 ] ||
  { echo "FAIL: one SIGTERM: exit $rc (want 1), log:"; cat log1; bad=1; }
# two: the second ends it where it stands (the signal's own status, 128 + 15)
WEFT_CACHE_DIR=$tmp/cache2 "$weft" tune sweep.lua --fake-timing --jobs 1 --db "$tmp/db2" -o out2 > log2 2>&1 &
pid=$!
compiling "$tmp/cache2" || bad=1
kill -TERM $pid
sleep 0.05
kill -TERM $pid 2> /dev/null
wait $pid
rc=$?
[ $rc = 143 ] || [ $rc = 1 ] || { echo "FAIL: two SIGTERMs: exit $rc (want 143, or 1 if the first had already stopped it)"; bad=1; }
[ $bad = 0 ] && echo "tune_sigterm: stopped cleanly by one SIGTERM (exit 1, output kept), at once by two (exit $rc)"
exit $bad
