#!/usr/bin/env bash
# tests/cli/plot_path.sh WEFT TMP: `weft tune --plot` with output folders whose names gnuplot would
# read as commands ('<cmd' as a file to plot, '|cmd' as an output) or end early (a run of doubled
# quotes) runs no command and writes nothing outside them: the plot is written inside the folder,
# the files those commands would have made do not exist, and a file named by the part before the
# quotes keeps its bytes.  Exit 77 (SKIP) without gnuplot.
set -u
weft=$1 tmp=$2
command -v gnuplot > /dev/null || { echo "no gnuplot here: SKIP"; exit 77; }
rm -rf "$tmp" && mkdir -p "$tmp" && cd "$tmp" || exit 1
cat > sweep.lua <<'LUA'
return { base = { family = "row_reduce", dtype = "f32", op = "sum" },
  space = { threads = { 256, 512 } },
  shapes = { { rows = 64, cols = 4096 } } }
LUA
export WEFT_CACHE_DIR=$tmp/cache
bad=0
echo precious > "victim'"
for out in '< touch PWNED_DAT;' '|touch PWNED_OUT;' '<touch PWNED_GP;' '~' "victim''x" "$tmp/victim''y"; do
  "$weft" tune sweep.lua --fake-timing --jobs 1 --db "$tmp/db" -o "$out" --plot > log 2>&1
  rc=$?
  if [ $rc != 0 ] || [ ! -s "$out/tune-row_reduce.png" ]; then
    echo "FAIL: -o '$out': exit $rc, plot $( [ -s "$out/tune-row_reduce.png" ] && echo written || echo missing):"
    cat log
    bad=1
  fi
done
for f in PWNED_DAT PWNED_OUT PWNED_GP; do
  [ ! -e "$f" ] || { echo "FAIL: $f exists: gnuplot ran a command named by the output folder"; bad=1; }
done
# a run of doubled quotes (gnuplot 5.4 ends the string at it): the file before the quotes truncated
[ "$(cat "victim'")" = precious ] || { echo "FAIL: victim' was written through: '$(cat "victim'")'"; bad=1; }
[ $bad = 0 ] && echo "plot_path: 6 folders, no command run, no file outside them written"
exit $bad
