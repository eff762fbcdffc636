#!/usr/bin/env bash
# tests/cli/bad_inputs.sh WEFT SRC TMP: what a careless user or an attacker gives weft, each
# answered with a message that names the file, flag or field and the value, never a hang, a silent
# default or a half-written file (an attack review's findings, kept as tests).  No GPU needed.
set -u
W=$1 SRC=$2 T=$3
rm -rf "$T" && mkdir -p "$T" && cd "$T" || exit 1
export WEFT_CACHE_DIR=$T/cache WEFT_TUNE_DB=$T/tune.db WEFT_AUTO_TABLE=none
fails=0
# expect RC TEXT CMD...: the command exits RC (within 20 s: a hang fails) with TEXT in its output
expect() {
  local rc=$1 text=$2 out got
  shift 2
  out=$(timeout 20 "$@" 2>&1 < /dev/null)
  got=$?
  if [ "$got" != "$rc" ] || [[ "$out" != *"$text"* ]]; then
    echo "FAIL: $* -> exit $got (want $rc), output:"; echo "$out" | head -5; echo "(wanted: $text)"
    fails=$((fails + 1))
  else
    echo "ok: $*"
  fi
}
echo 'return { family = "row_reduce", dtype = "f32", op = "sum" }' > rr.lua
SW=$SRC/examples/sweeps/row_reduce.lua

# files that are not files: a named pipe (opened, it used to block forever), a folder
mkfifo fifo.lua
expect 2 "fifo.lua: a pipe that nothing was written to within 1 s (WEFT_CONFIG_SECONDS)" env WEFT_CONFIG_SECONDS=1 "$W" gen fifo.lua -o g1
# ... a writer that comes later is waited for (within WEFT_CONFIG_SECONDS), one that writes nothing said
(sleep 1; cat rr.lua > fifo.lua) &
expect 0 "wrote" env WEFT_CONFIG_SECONDS=10 "$W" gen fifo.lua -o g1b
wait
(sleep 1; : > fifo.lua) &
expect 2 "fifo.lua: a named pipe whose writer wrote nothing" env WEFT_CONFIG_SECONDS=10 "$W" gen fifo.lua -o g1c
wait
expect 2 "is a folder, not a file" "$W" gen "$T" -o g2
expect 1 "tune database fifo.lua is a named pipe, not a file" "$W" export-table --gpu x --sm 1 --driver 1 --db fifo.lua o.tsv
mkdir dir.db
expect 1 "tune database dir.db is a folder, not a file" "$W" export-table --gpu x --sm 1 --driver 1 --db dir.db o.tsv
# ... while a pipe with a writer (a shell's <(...)) is still read
expect 0 "wrote" "$W" gen <(cat rr.lua) -o g3

# flags: a flag taken as the value of the one before, repeated or out-of-range counts
expect 2 "--db needs a path, not the flag '--plot'" "$W" tune "$SW" --fake-timing --db --plot
[ -e ./--plot ] && { echo "FAIL: a database named --plot was made"; fails=$((fails + 1)); }
expect 2 "--set needs key=value, not the flag '-o'" "$W" gen rr.lua --set -o g4
expect 2 "-o needs a folder, not the flag '-x'" "$W" gen rr.lua -o -x
expect 2 "--db needs a path, not the flag '--ranks'" "$W" suggest rr.lua 8192x32768 --db --ranks
expect 2 "--db needs a path, not the flag '--no-check'" "$W" run rr.lua --db --no-check
expect 2 "--shape needs a shape (rows=4096 cols=50257, or 4096x50257), not the flag '-o'" "$W" gen rr.lua --auto --shape -o g4b
expect 2 "--gpu needs a name, not the flag '--sm'" "$W" export-table --gpu --sm 1 --driver 1 o.tsv
expect 2 "--iters 2: expected a whole number (decimal) in 3..100000 (a median of three timed loops needs three)" "$W" tune "$SW" --iters 2
expect 2 "--jobs 0: expected a whole number (decimal) in 1..256" "$W" tune "$SW" --jobs 0
expect 2 "--export with --fake-timing" "$W" tune "$SW" --fake-timing --export e.tsv
expect 2 "--export $T/nowhere/e.tsv: its folder $T/nowhere does not exist" "$W" tune "$SW" --export "$T/nowhere/e.tsv"
expect 2 "--export $T/: names a folder; it takes a file" "$W" tune "$SW" --export "$T/"
expect 2 "--shape given twice ('8x8' and '16x16')" "$W" gen rr.lua --auto --shape 8x8 --shape 16x16 -o g5
many=(); for i in $(seq 1 126); do many+=(--set op=sum); done
expect 2 "126 --set and the" "$W" gen rr.lua "${many[@]}" --auto --shape 8x8 -o g6
[ -e g6 ] && { echo "FAIL: g6 written"; fails=$((fails + 1)); }

# a database with weft's schema version but not its results table: said before the run
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("w2.db")
c.execute("create table tunedb_schema(version)"); c.execute("insert into tunedb_schema values(1)")
c.execute("create table results(a, b, c)"); c.commit()
PY
expect 1 "its results table has 0 of weft's 16 columns" env WEFT_TUNE_DB=w2.db "$W" tune "$SW" --fake-timing -o t1
# ... or a view named results (CREATE TABLE IF NOT EXISTS kept it; every store failed after the run)
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("w3.db")
c.execute("create table tunedb_schema(version)"); c.execute("insert into tunedb_schema values(1)")
c.execute("create view results as select * from tunedb_schema"); c.commit()
PY
expect 1 "its results is not a table (a view or an index of that name)" env WEFT_TUNE_DB=w3.db "$W" tune "$SW" --fake-timing -o t1v
[ -e t1v/tune-row_reduce.csv ] && { echo "FAIL: tune ran before refusing a results view"; fails=$((fails + 1)); }

# export-table: rows the table's reader would refuse, text that would reach Lua, a newline in a name
"$W" tune "$SW" --fake-timing -o t2 > /dev/null 2>&1
python3 - <<'PY'
import shutil, sqlite3
for name, sql in (("neg.db", "update results set time_us = -5"),
                  ("inj.db", "update results set family = 'row_reduce\", op = error(\"injected\"), x = \"'")):
    shutil.copy("tune.db", name)
    c = sqlite3.connect(name); c.execute(sql); c.commit(); c.close()
PY
G=(--gpu 'FAKE (--fake-timing)' --sm 0 --driver 0)
expect 1 "time_us = -5.0: a time is a positive number of microseconds" "$W" export-table "${G[@]}" --db neg.db neg.tsv
expect 1 "is not a name ([a-z0-9_]+)" "$W" export-table "${G[@]}" --db inj.db inj.tsv
out=$(timeout 20 "$W" export-table "${G[@]}" --db inj.db inj.tsv 2>&1)
[[ "$out" == *"injected"*"is not a name"* && "$out" != *"(table row):"* ]] || { echo "FAIL: injected text ran: $out"; fails=$((fails + 1)); }
nl=$'x\nrow_reduce\tf32\t1\tcols=1024 rows=1024\t1.0\tthreads=64.tsv'
expect 0 "exported" "$W" export-table "${G[@]}" --db tune.db "$nl"
rows=$(grep -vc '^#' "$nl")
[ "$(grep -c '^family' "$nl")" = 1 ] && [ "$(grep -v '^#' "$nl" | head -1 | cut -f1)" = family ] ||
  { echo "FAIL: the file name's newline made a row of the header"; head -9 "$nl"; fails=$((fails + 1)); }

# a second attack review (files weft did not write): export-table with FILE the database itself, or
# any SQLite file, replaced the measurements with the table
cp tune.db keep.db
expect 1 "is the tuning database itself" "$W" export-table "${G[@]}" --db keep.db keep.db
expect 1 "is an SQLite database (a tuning database?), not a table" "$W" export-table "${G[@]}" --db tune.db keep.db
expect 2 "is the tuning database itself" "$W" tune "$SW" --fake-timing --db keep.db --export keep.db -o t4
mkdir -p exdir
expect 2 "--export exdir: names a folder; it takes a file (a .tsv)" "$W" tune "$SW" --export exdir -o t5
[ -e t4 ] && { echo "FAIL: tune ran before refusing --export at its database"; fails=$((fails + 1)); }
cmp -s tune.db keep.db || { echo "FAIL: the database was replaced"; fails=$((fails + 1)); }
# a third review: a FILE that is a device or a named pipe, or a link to one (/dev/stdout), was
# replaced by the table's rename (/dev/null became a regular file); refused, before a tune's run too,
# and left as it was
mkfifo ex_pipe; ln -s ex_pipe ex_link
expect 1 "ex_pipe is a named pipe, not a regular file" "$W" export-table "${G[@]}" --db tune.db ex_pipe
expect 1 "ex_link is a link to a named pipe, not a regular file" "$W" export-table "${G[@]}" --db tune.db ex_link
expect 2 "ex_pipe is a named pipe, not a regular file" "$W" tune "$SW" --export ex_pipe -o t9
[ -e t9 ] && { echo "FAIL: tune ran before refusing --export at a named pipe"; fails=$((fails + 1)); }
[ -p ex_pipe ] && [ -L ex_link ] || { echo "FAIL: a pipe or a link to one given as FILE was replaced"; fails=$((fails + 1)); }
# ... and tune's own .csv where a link to a pipe stands (its rows are kept in the database)
mkdir -p t10 && ln -s ../ex_pipe t10/tune-row_reduce.csv
"$W" tune "$SW" --fake-timing -o t10 > t10.log 2>&1
grep -q "is a link to a named pipe, not a regular file" t10.log && [ -L t10/tune-row_reduce.csv ] ||
  { echo "FAIL: tune replaced a link to a pipe at its .csv:"; tail -3 t10.log; fails=$((fails + 1)); }
# a cache entry with a right checksum but no cubin is corrupt: rebuilt, never written out as an empty .cubin
"$W" build rr.lua -o g12 > /dev/null 2>&1
python3 - cache/*/*.bin <<'PY'
import hashlib, struct, sys
for p in sys.argv[1:]:
    d = open(p, "rb").read()
    h = bytearray(d[:96]); ptx, cubin, log = struct.unpack("<QQQ", h[40:64])
    payload = d[96:96 + ptx] + d[96 + ptx + cubin:]
    h[48:56] = struct.pack("<Q", 0); h[64:96] = hashlib.sha256(bytes(h[:64]) + payload).digest()
    open(p, "wb").write(bytes(h) + payload)
PY
expect 0 "(NVRTC)" "$W" build rr.lua -o g13
[ "$(head -c 4 g13/*.cubin | od -An -c | tr -d ' ')" = '177ELF' ] || { echo "FAIL: g13's .cubin is no ELF image"; fails=$((fails + 1)); }

# WEFT_DRIVER_LIB pointing at a library that is no driver at all
z=$(ls /usr/lib/*/libz.so.1 /lib/*/libz.so.1 2> /dev/null | head -1)
[ -n "$z" ] && expect 77 "is not an NVIDIA driver (it has no cuInit): check WEFT_DRIVER_LIB" env WEFT_DRIVER_LIB="$z" "$W" run rr.lua

echo "bad_inputs: $fails failed ($rows exported rows read back)"
[ $fails = 0 ]
