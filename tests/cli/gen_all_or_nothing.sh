#!/bin/bash
# tests/cli/gen_all_or_nothing.sh WEFT EXAMPLES OUT: weft gen / weft build write every file or
# none.  A file-size limit (ulimit -f, SIGXFSZ ignored so write fails with EFBIG) stands in for a
# full disk: into a new folder, nothing may appear; into an existing one, only what was there.
set -u
weft=$1 ex=$2 out=$3
rm -rf "$out" && mkdir -p "$out/old" || exit 1
echo keep > "$out/old/mine.txt"
fail() { echo "FAIL: $*"; exit 1; }
for dir in "$out/new" "$out/old"; do
  ( trap '' XFSZ; ulimit -f 8; "$weft" gen "$ex/row_reduce.lua" -o "$dir" ) > "$out/log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "exit $rc into $dir: $(cat "$out/log")"
  grep -q "nothing was written to $dir" "$out/log" || fail "no message: $(cat "$out/log")"
done
[ ! -e "$out/new" ] || fail "$out/new exists: $(ls -la "$out/new")"
left=$(ls -A "$out/old")
[ "$left" = "mine.txt" ] || fail "$out/old holds: $left"
ls -A "$out" | grep -q weft-tmp && fail "a staging folder is left: $(ls -A "$out")"
# and without the limit both succeed, with every file in place
"$weft" gen "$ex/row_reduce.lua" -o "$out/new" > "$out/log" 2>&1 || fail "$(cat "$out/log")"
[ "$(ls "$out/new" | wc -l)" = 2 ] || fail "new: $(ls -A "$out/new")"
echo "ok: all or nothing"
