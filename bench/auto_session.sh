#!/usr/bin/env bash
# bench/auto_session.sh [--dry-run] [all|sweep|export|rows]: issue 18's GPU proof of "auto" for the
# row families, in one or two device calls of at most 600 s.  Run from the repo root on the GPU
# machine with build/ carried (build/weft, build/python with libweft.so.0):
#   sweep   the full sweeps bench/auto/*.lua (bench/auto/grid.py wrote them) into a fresh tuning DB,
#           in the order of bench/auto/estimate.tsv, as many as fit in this call's budget;
#   export  the best row per shape into $OUT/h200.tsv (weft export-table), once every sweep ran;
#   rows    bench/auto_rows.py: rule / auto (with that table) / the sweep's best / torch per shape.
# "all" (the default) does what is left of the three, so the same command is run again in the
# second call if the first ran out of time; it says so last.
# State that must outlive a call (kernel cache, DB, CSVs, done markers) is under $AUTO_STATE
# (default build/auto-state: kept while the machine stays warm, and it travels with build/);
# logs, the DB, the CSVs and the table are copied under $OUT (default /tmp/weft_auto) every call.
# AUTO_BUDGET: seconds of this call (default 560), JOBS (16), ITERS (20), PY (python3 with torch).
set -u
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
part=${1:-all}
case $part in all|sweep|export|rows) ;; *) echo "usage: bash bench/auto_session.sh [--dry-run] [all|sweep|export|rows]" >&2; exit 2 ;; esac
OUT=${OUT:-/tmp/weft_auto}
STATE=${AUTO_STATE:-$PWD/build/auto-state}
BUDGET=${AUTO_BUDGET:-560}
JOBS=${JOBS:-16}
ITERS=${ITERS:-20}
PY=${PY:-python3}
WEFT=${WEFT:-build/weft}
DB=$STATE/tune.db
TABLE=$STATE/h200.tsv
mkdir -p "$OUT" "$STATE/csv" "$STATE/done"
# a cold machine lost $STATE: the previous call's $OUT/tune.db and $OUT/done.txt copied into
# $AUTO_STATE (and carried) resume it
if [ -f "$STATE/done.txt" ]; then while read -r n; do [ -n "$n" ] && touch "$STATE/done/$n"; done < "$STATE/done.txt"; fi
. bench/env.sh
export WEFT_CACHE_DIR=$STATE/cache
export PYTHONPATH=$PWD/build/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1
unset WEFT_AUTOTUNE WEFT_AUTO_TABLE   # the sweeps measure; nothing here may tune on first use
t0=$SECONDS
sim=0   # --dry-run: the estimated seconds of what it would have run, so it shows what fits in this call
left() { echo $((BUDGET - (SECONDS - t0) - sim)); }
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
if [ ! -x "$WEFT" ] && [ $dry = 0 ]; then echo "$WEFT missing: carry build/" >&2; exit 1; fi
[ $dry = 0 ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

# ---- sweeps -----------------------------------------------------------------------------------
pending=0
if [ "$part" = all ] || [ "$part" = sweep ]; then
  while IFS=$'\t' read -r sweep shapes kernels run_s; do
    case $sweep in \#*|sweep) continue ;; esac
    name=${sweep%.lua}
    if [ -e "$STATE/done/$name" ]; then continue; fi
    # estimate: the cold compiles on JOBS threads (0.5 s each) + grid.py's run seconds, 5 % margin
    # (a sweep that runs long is stopped by its --budget, keeping what it measured, and says so)
    est=$(awk -v k="$kernels" -v r="$run_s" -v j="$JOBS" 'BEGIN { printf "%d", (k * 0.5 / j + r) * 1.05 + 3 }')
    if [ "$(left)" -lt "$est" ]; then
      note "sweep $name: needs ~${est} s, $(left) s left in this call: left for the next call"
      pending=$((pending + 1))
      continue
    fi
    # --budget: weft tune stops cleanly (keeping what it measured) at 3x the estimate, never past the call
    cap=$((est * 3)); [ "$cap" -gt "$(left)" ] && cap=$(left)
    cmd=("$WEFT" tune "bench/auto/$sweep" --jobs "$JOBS" --iters "$ITERS" --db "$DB" -o "$STATE/csv/$name" --budget "$cap")
    if [ $dry = 1 ]; then echo "WEFT_CACHE_DIR=$WEFT_CACHE_DIR ${cmd[*]}   # ~${est} s"; sim=$((sim + est)); continue; fi
    mkdir -p "$STATE/csv/$name"
    s0=$SECONDS
    "${cmd[@]}" < /dev/null > "$OUT/tune_$name.log" 2>&1
    rc=$?
    stopped=$(grep -c "^stopped by the budget" "$OUT/tune_$name.log")
    note "sweep $name: rc $rc in $((SECONDS - s0)) s (estimate ${est} s)$( [ "$stopped" != 0 ] && echo ', STOPPED BY THE BUDGET: some candidates not run')"
    grep -E "^compiled |^running " "$OUT/tune_$name.log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    [ $rc = 0 ] && touch "$STATE/done/$name"
  done < bench/auto/estimate.tsv
fi

# ---- the table ----------------------------------------------------------------------------------
if [ "$part" = all ] || [ "$part" = export ]; then
  if [ $pending != 0 ]; then
    note "export: $pending sweep(s) not run yet; run the same command again (the next call resumes)"
  elif [ $dry = 1 ]; then
    echo "$WEFT export-table --db $DB $TABLE"
  else
    # (weft tune --export FILE does the same at the end of a sweep; the table wants every sweep's rows)
    "$WEFT" export-table --db "$DB" "$TABLE" > "$OUT/export.log" 2>&1
    rc=$?
    grep -c "skipped" "$OUT/export.log" | sed 's/^/    rows skipped by the export: /' | tee -a "$OUT/summary.txt"
    note "export: rc $rc, $(grep -vc '^#' "$TABLE" 2>/dev/null || echo 0) lines in $TABLE"
  fi
fi

# ---- the rule scored on the sweeps (host only: bench/auto/fit_rows.lua over the CSVs) ------------
if [ $pending = 0 ] && { [ "$part" = all ] || [ "$part" = export ]; }; then
  lua=build/tests/weft-lua
  if [ $dry = 1 ]; then
    echo "$lua . bench/auto/fit_rows.lua $STATE/csv/*/tune-*.csv"
  elif [ -x "$lua" ]; then
    timeout 120 "$lua" . bench/auto/fit_rows.lua "$STATE"/csv/*/tune-*.csv > "$OUT/fit_rows.log" 2>&1
    note "fit_rows: rc $?: $(tail -1 "$OUT/fit_rows.log")"
  fi
fi

# ---- auto against the sweep and torch ----------------------------------------------------------
if [ "$part" = all ] || [ "$part" = rows ]; then
  if [ $pending != 0 ]; then
    :
  elif [ $dry = 1 ] && [ "$(left)" -lt 120 ] && [ "$part" = all ]; then
    echo "rows: $(left) s left in this call, ~120 s needed: the next call"
  elif [ $dry = 1 ]; then
    echo "$PY bench/auto_rows.py --db $DB --table $TABLE --jobs $JOBS --out $OUT --budget $(( $(left) - 15 ))"
    "$PY" bench/auto_rows.py --dry-run --db "$DB" --table "$TABLE" --out "$OUT" | tail -1
  elif [ "$(left)" -lt 120 ] && [ "$part" = all ]; then
    note "rows: $(left) s left in this call, ~120 s needed: run the same command again (or: bash bench/auto_session.sh rows)"
    pending=1
  elif [ ! -s "$TABLE" ]; then
    note "rows: no table at $TABLE (export failed?): see $OUT/export.log"
  else
    s0=$SECONDS
    # --budget: no new shape is timed past it (the table says which were not); timeout: a hang
    timeout $(( $(left) + 20 )) "$PY" bench/auto_rows.py --db "$DB" --table "$TABLE" --jobs "$JOBS" --out "$OUT" \
      --budget $(( $(left) - 15 )) > "$OUT/auto_rows.log" 2>&1 < /dev/null
    note "rows: rc $? in $((SECONDS - s0)) s"
  fi
fi

# ---- what comes back ----------------------------------------------------------------------------
if [ $dry = 0 ]; then
  cp -f "$DB" "$OUT/tune.db" 2>/dev/null
  ls "$STATE/done" > "$STATE/done.txt"; cp -f "$STATE/done.txt" "$OUT/done.txt"
  cp -f "$TABLE" "$OUT/h200.tsv" 2>/dev/null
  for d in "$STATE"/csv/*/; do [ -d "$d" ] && cp -f "$d"/tune-*.csv "$OUT/$(basename "$d").csv" 2>/dev/null; done
  echo "== summary ($((SECONDS - t0)) s)"; cat "$OUT/summary.txt"
  [ -f "$OUT/auto_rows.log" ] && grep -E "^\| |^targets|^auto/best|^# [0-9]+ shapes|^# chose" "$OUT/auto_rows.log" | tail -260
fi
[ $pending != 0 ] && echo "NOT FINISHED: run the same command again in the next call (state in $STATE)"
exit 0
