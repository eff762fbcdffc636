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

# a fourth review: a shape holding a tab printed an unset message buffer as its reason; an empty
# FILE got "cannot rename into place"
python3 - <<'PY'
import shutil, sqlite3
shutil.copy("tune.db", "tab.db")
c = sqlite3.connect("tab.db"); c.execute("update results set shape = 'cols=1024\trows=64' where rowid = (select min(rowid) from results)"); c.commit(); c.close()
PY
expect 0 "(1 skipped)" "$W" export-table "${G[@]}" --db tab.db tab.tsv
out=$(timeout 20 "$W" export-table "${G[@]}" --db tab.db tab.tsv 2>&1)
[ "$(printf '%s\n' "$out" | grep -c "): its shape holds a tab (the table's columns are separated by tabs)$")" = 1 ] || { echo "FAIL: a skipped tab row's reason: $out" | head -3; fails=$((fails + 1)); }
expect 2 "FILE is empty: name the table's file" "$W" export-table "${G[@]}" --db tune.db ""

# ... a damaged page deep in the database passed the open's checks and failed only the store,
# after the whole run: weft tune checks every page first
python3 - <<'PY'
d = bytearray(open("tune.db", "rb").read())
for p in range(4, len(d) // 4096):   # (pages 1-3, the schema, kept readable: the damage is deeper)
    d[p * 4096 + 8:p * 4096 + 200] = b"\xab" * 192
open("damaged.db", "wb").write(bytes(d))
PY
expect 1 "tune database damaged.db is damaged (SQLite's quick check: " "$W" tune "$SW" --fake-timing --db damaged.db -o t11
[ -e t11/tune-row_reduce.csv ] && { echo "FAIL: tune ran before refusing a damaged database"; fails=$((fails + 1)); }

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
# ... and at the database of no --db and no WEFT_TUNE_DB, tunedb's default ($HOME/.cache/weft/tune.db,
# $XDG_CACHE_HOME/weft/tune.db): the check before the run looked at WEFT_TUNE_DB only
mkdir -p home/.cache/weft xdg/weft && cp tune.db home/.cache/weft/tune.db && cp tune.db xdg/weft/tune.db
expect 2 "is the tuning database itself ($T/home/.cache/weft/tune.db)" env -u WEFT_TUNE_DB -u XDG_CACHE_HOME HOME="$T/home" \
  "$W" tune "$SW" --fake-timing --export "$T/home/.cache/weft/tune.db" -o t6
expect 2 "is the tuning database itself ($T/xdg/weft/tune.db)" env -u WEFT_TUNE_DB XDG_CACHE_HOME="$T/xdg" HOME="$T/home" \
  "$W" tune "$SW" --fake-timing --export xdg/weft/tune.db -o t7
# (an empty file there, no SQLite header, was not refused before the run at all: after it, at the export)
mkdir -p home2/.cache/weft && : > home2/.cache/weft/tune.db
expect 2 "is the tuning database itself ($T/home2/.cache/weft/tune.db)" env -u WEFT_TUNE_DB -u XDG_CACHE_HOME \
  HOME="$T/home2" "$W" tune "$SW" --fake-timing --export "$T/home2/.cache/weft/tune.db" -o t8
[ -s home2/.cache/weft/tune.db ] && { echo "FAIL: the empty default database was written"; fails=$((fails + 1)); }
[ -e t6 ] || [ -e t7 ] || [ -e t8 ] && { echo "FAIL: tune ran before refusing --export at its default database"; fails=$((fails + 1)); }
cmp -s tune.db home/.cache/weft/tune.db && cmp -s tune.db xdg/weft/tune.db ||
  { echo "FAIL: the default database was changed"; fails=$((fails + 1)); }
# ... hand-edited times: a -5 or a text time never ranks first (the best of each shape is the
# fastest good row: the same as with the bad rows gone), and text sorts as a number, not as text
python3 - <<'PY'
import shutil, sqlite3
def best(name):
    c = sqlite3.connect(name)
    r = c.execute("select shape, min(time_us) from results where typeof(time_us) = 'real' and time_us > 0 group by shape").fetchall()
    c.close(); return dict(r)
shutil.copy("tune.db", "bad_t.db")
c = sqlite3.connect("bad_t.db")
slow = c.execute("select shape, config from results r where time_us = (select max(time_us) from results where shape = r.shape)").fetchall()
for shape, cfg in slow:
    for i, t in enumerate((-5, 0, "abc", None if False else "nan-ish", float("-inf"))):
        c.execute("insert into results select gpu, sm, driver, nvrtc, ranks, family, dtype, shape, config || ?, base, kernel, ?, metric, metric_name, sweep, recorded from results where shape = ? and config = ?", ("\n-- %d" % i, t, shape, cfg))
c.commit(); c.close()
shutil.copy("tune.db", "abc.db")   # (every row's time text: each skipped with the time as stored)
c = sqlite3.connect("abc.db"); c.execute("update results set time_us = 'abc'"); c.commit(); c.close()
shutil.copy("tune.db", "esc.db")   # (a time with an escape sequence: shown escaped)
c = sqlite3.connect("esc.db"); c.execute("update results set time_us = ?", ("\x1b[2J",)); c.commit(); c.close()
# a results table declared with time_us TEXT: refused, naming the column
c = sqlite3.connect("text_t.db")
c.execute("create table tunedb_schema(version INTEGER NOT NULL)"); c.execute("insert into tunedb_schema values(1)")
c.execute("create table results(gpu TEXT, sm INTEGER, driver INTEGER, nvrtc TEXT, ranks INTEGER, family TEXT, dtype TEXT, shape TEXT, config TEXT, base TEXT, kernel TEXT, time_us TEXT, metric REAL, metric_name TEXT, sweep TEXT, recorded INTEGER)")
c.commit(); c.close()
# ranks past 32 bits: read as stored, not as its low 32 bits (1)
shutil.copy("tune.db", "big_r.db")
c = sqlite3.connect("big_r.db"); c.execute("update results set ranks = 4294967297"); c.commit(); c.close()
PY
"$W" export-table "${G[@]}" --db tune.db good_t.tsv > /dev/null 2>&1
expect 0 "exported" "$W" export-table "${G[@]}" --db bad_t.db bad_t.tsv
diff <(grep -v '^#' good_t.tsv) <(grep -v '^#' bad_t.tsv) > /dev/null ||
  { echo "FAIL: hand-edited bad times changed the exported best rows"; diff good_t.tsv bad_t.tsv | head -5; fails=$((fails + 1)); }
expect 1 "time_us = 'abc': a time is a positive number of microseconds" "$W" export-table "${G[@]}" --db abc.db x.tsv
expect 1 "time_us = '\\x1b[2J': a time is a positive number of microseconds" "$W" export-table "${G[@]}" --db esc.db x.tsv
expect 1 "its results table's column time_us is declared \"TEXT\", not REAL" "$W" export-table "${G[@]}" --db text_t.db x.tsv
expect 1 "its results table's column time_us is declared \"TEXT\", not REAL" env WEFT_TUNE_DB=text_t.db "$W" tune "$SW" --fake-timing -o t3
expect 1 "ranks = 4294967297: a rank count is in 1..65536" "$W" export-table "${G[@]}" --db big_r.db x.tsv
# ... a name that starts with "file:" is a file, not an SQLite URI (mode=memory was a database in memory)
cp tune.db 'file:uri.db'
expect 0 "exported" "$W" export-table "${G[@]}" --db 'file:uri.db' uri.tsv
expect 1 "there is no tuning database at file:x.db?mode=memory" "$W" export-table "${G[@]}" --db 'file:x.db?mode=memory' uri2.tsv
# ... and with no --db, the default path it looked at is named (not "the default path")
mkdir -p nohome
expect 1 "there is no tuning database at $PWD/nohome/.cache/weft/tune.db" env -u WEFT_TUNE_DB -u XDG_CACHE_HOME HOME="$PWD/nohome" "$W" export-table "${G[@]}" nodef.tsv

# a table row that no longer checks, at the very shape asked: said, not skipped without a word
printf '# weft tuning table\n# gpu: NVIDIA H200\n# sm: 90\nfamily\tdtype\tranks\tshape\ttime_us\tconfig\nrow_reduce\tf32\t1\tcols=32768 rows=8192\t10.0\tbogus=2\n' > unk.tsv
expect 0 "unk.tsv:5: its table row for cols=32768 rows=8192 is not used" env WEFT_AUTO_TABLE=unk.tsv "$W" suggest rr.lua 8192x32768
# ... with two reasons, on one line (the second was a line of its own, without the file's line)
printf '# weft tuning table\n# gpu: NVIDIA H200\n# sm: 90\nfamily\tdtype\tranks\tshape\ttime_us\tconfig\nrow_reduce\tf32\t1\tcols=32768 rows=8192\t10.0\tthreads=100;cluster=99\n' > two.tsv
expect 0 "two.tsv:5: its table row for cols=32768 rows=8192 is not used: two.tsv: cluster = 99: must be an integer in 1..16; two.tsv: threads = 100" \
  env WEFT_AUTO_TABLE=two.tsv "$W" suggest rr.lua 8192x32768

# a byte-order mark some editors write; a variable checked on a cache hit too; numbers in decimal
printf '\xef\xbb\xbfreturn { family = "row_reduce", dtype = "f32", op = "sum" }\n' > bom.lua
expect 0 "wrote" "$W" gen bom.lua -o g7
"$W" build rr.lua -o g8 > /dev/null 2>&1   # (now in the cache: the next build is a hit)
expect 2 'WEFT_CACHE_LOCK_SECONDS = "x": must be a whole number of seconds' env WEFT_CACHE_LOCK_SECONDS=x "$W" build rr.lua -o g9
expect 2 "--iters 0x10: expected a whole number (decimal) in 1..1000000" "$W" run rr.lua --iters 0x10
# "auto" where the command chooses nothing: the message says what does
expect 2 'threads = "auto": must be an integer in {64, 128, 256, 512, 1024} (or "auto", chosen for a shape: with --auto --shape S' "$W" gen rr.lua --set threads=auto -o g10
# ... and on a key field (it changes the result: auto never chooses it) it says that and the default
expect 2 'dtype = "auto": must be one of "f32", "f16", "bf16" ("auto" chooses no dtype: it changes the result, so it is the config'"'"'s to set; left out, it is "f32")' "$W" gen rr.lua --set dtype=auto -o g10
# the README's example of auto: answered from the shipped table, its detail one readable line (the
# table's command line made it 2.5 KB)
out=$(env -u WEFT_AUTO_TABLE "$W" suggest "$SRC/examples/auto/row_softmax.lua" 4096x50257 2>&1)
d=$(grep '^detail: table: ' <<< "$out")
[ -n "$d" ] && [ ${#d} -lt 500 ] || { echo "FAIL: suggest's detail: ${#d} bytes: ${d:0:200}"; fails=$((fails + 1)); }
# one parser for every whole-number flag: strtol took a sign and leading blanks in suggest and export-table
expect 2 "--ranks +5: expected a whole number (decimal) in 1..65536" "$W" suggest rr.lua 8192x32768 --ranks +5
expect 2 "--candidates  3: expected a whole number (decimal) in 0..16" "$W" suggest rr.lua 8192x32768 --candidates " 3"
expect 2 "--sm -0: expected a whole number (decimal) in 0..1000" "$W" export-table --gpu x --sm -0 --driver 1 o.tsv
expect 2 "--driver needs a whole number in 0..1000000" "$W" export-table --gpu x --sm 90 --driver
expect 2 "--budget 99999999999999999999: expected a whole number (decimal) in 0..1073741824" "$W" tune "$SW" --budget 99999999999999999999

# ... and the size flags and the number variables too (a third review: --rows ' 5', --shape +5x5 and
# WEFT_CONFIG_SECONDS=+5 were taken)
expect 2 "--rows: rows =  5: must be a positive integer" "$W" run rr.lua --rows " 5"
expect 2 "--shape +5x5: rows = +5: must be a positive integer" "$W" run rr.lua --shape +5x5
expect 2 'WEFT_CONFIG_SECONDS = "+5": must be a whole number of seconds' env WEFT_CONFIG_SECONDS=+5 "$W" gen rr.lua -o g14
# control bytes in a size are shown escaped, not sent to the terminal (a fourth review: "cols=1\x01"
# showed as "cols = 1", and an escape sequence would have run)
expect 2 '--shape cols=1\x01 rows=4: expected rowsxcols' "$W" run rr.lua --shape "$(printf 'cols=1\001 rows=4')"
expect 2 '--rows: rows = 4\x1b[2J: must be a positive integer' "$W" run rr.lua --rows "$(printf '4\033[2J')"
# ... and so in every message the CLI prints (a fifth review: a flag's value, a command's name and
# a tune database's row were echoed raw)
expect 2 '--iters 5\x1b[2J: expected a whole number' "$W" run rr.lua --iters "$(printf '5\033[2J')"
expect 2 "unknown command 'x\\x1b[2J'" "$W" "$(printf 'x\033[2J')"
expect 2 "unknown option '--x\\x07'" "$W" run rr.lua "$(printf -- '--x\007')"
# ... and on stdout, through every print (a fifth review): gen's "wrote" lines name -o's folder; the
# tuning table's path in the warning; a sweep's path; C1 controls (\xc2\x9b is CSI) too, while
# UTF-8 text stays as it is; the database's row, escaped when export-table warns and skips it
expect 0 "wrote o\\x1b[2J/" "$W" gen rr.lua -o "$(printf 'o\033[2J')"
expect 0 "WEFT_AUTO_TABLE = \"t\\x1b[2J.tsv\"" env WEFT_AUTO_TABLE="$(printf 't\033[2J.tsv')" "$W" suggest rr.lua rows=8,cols=64
expect 2 "weft tune: s\\x1b[2J.lua: cannot open" "$W" tune "$(printf 's\033[2J.lua')" --fake-timing -o t9
expect 2 "unknown command 'x\\xc2\\x9b2J caf"$'\xc3\xa9'"'" "$W" "$(printf 'x\302\2332J caf\303\251')"
out=$(timeout 20 "$W" gen rr.lua -o "$(printf 'o\033[2J')" 2>&1; timeout 20 "$W" "$(printf 'x\302\2332J')" 2>&1)
[[ "$out" == *$'\033'* || "$out" == *$'\xc2\x9b'* ]] && { echo "FAIL: a control byte reached the terminal"; fails=$((fails + 1)); }

# a cache folder's name of 5000 bytes: the message shows its start and end, and still the reason
# (a third review: the 2048-byte message was cut inside the path)
long=$T/$(printf 'a%.0s' $(seq 1 5000))
expect 1 "bytes ...]" env WEFT_CACHE_DIR="$long" "$W" build rr.lua -o g15
expect 1 "File name too long; set WEFT_CACHE_DIR to a folder of your own" env WEFT_CACHE_DIR="$long" "$W" build rr.lua -o g15

# --plot with a newline in -o: plotted (gnuplot's scripts name no path of the user's; the folder's
# name was refused, and before that blamed on gnuplot's absence after the run)
if command -v gnuplot > /dev/null; then
  expect 0 "tune-row_reduce.png" "$W" tune "$SW" --fake-timing --plot -o $'pq/a\nb'
  [ -s $'pq/a\nb/tune-row_reduce.png' ] || { echo "FAIL: no plot in a folder whose name holds a newline"; fails=$((fails + 1)); }
fi

# --plot's .dat, .gp and .png go to their names, never through a link planted there (a link is
# replaced, its target kept); the .gp kept names the final .dat and .png; no private folder is left
mkdir pl
for e in dat gp png; do echo precious > "keep.$e"; ln -s "$T/keep.$e" "pl/tune-row_reduce.$e"; done
"$W" tune "$SW" --fake-timing --plot -o pl --db pl.db > /dev/null 2>&1
for e in dat gp; do
  [ "$(cat "keep.$e")" = precious ] && [ -f "pl/tune-row_reduce.$e" ] && [ ! -L "pl/tune-row_reduce.$e" ] ||
    { echo "FAIL: --plot wrote its .$e through a link"; fails=$((fails + 1)); }
done
grep -q "^set output 'tune-row_reduce.png'" pl/tune-row_reduce.gp && grep -q "^data = 'tune-row_reduce.dat'" pl/tune-row_reduce.gp ||
  { echo "FAIL: the kept .gp does not name the final .png and .dat"; head -3 pl/tune-row_reduce.gp; fails=$((fails + 1)); }
[ "$(cat keep.png)" = precious ] || { echo "FAIL: gnuplot wrote the .png through a link"; fails=$((fails + 1)); }
if command -v gnuplot > /dev/null; then
  [ -f pl/tune-row_reduce.png ] && [ ! -L pl/tune-row_reduce.png ] ||
    { echo "FAIL: no plot at pl/tune-row_reduce.png"; fails=$((fails + 1)); }
fi
[ -z "$(ls -A pl | grep '^\.')" ] || { echo "FAIL: --plot left $(ls -A pl | grep '^\.')"; fails=$((fails + 1)); }

# two `weft gen` into one -o DIR that does not exist yet: the one whose folder comes second goes
# into the other's file by file, never "cannot move ... Directory not empty" (20 tries, each 20 s at most)
for i in $(seq 1 20); do
  rm -rf race
  timeout 20 "$W" gen rr.lua -o race > race1.log 2>&1 & p1=$!
  timeout 20 "$W" gen rr.lua --set threads=128 -o race > race2.log 2>&1 & p2=$!
  wait $p1 && wait $p2 && [ "$(ls race | wc -l)" = 4 ] ||
    { echo "FAIL: two weft gen into one new folder (try $i):"; cat race1.log race2.log; ls -A race; fails=$((fails + 1)); break; }
done
ls -A | grep -q weft-tmp && { echo "FAIL: a staging folder is left: $(ls -A | grep weft-tmp)"; fails=$((fails + 1)); }
# -o a dangling link: named, with its target (the message named the staging folder)
ln -s nowhere dangling
expect 2 "-o dangling: a symbolic link to nowhere, which does not exist" "$W" gen rr.lua -o dangling
# a new -o folder follows the umask, as mkdir would (it was 0755 whatever the umask; the files followed it)
(umask 077; "$W" gen rr.lua -o um077 > /dev/null 2>&1; umask 002; "$W" gen rr.lua -o um002 > /dev/null 2>&1)
[ "$(stat -c %a um077)" = 700 ] && [ "$(stat -c %a um002)" = 775 ] ||
  { echo "FAIL: -o folder modes $(stat -c %a um077) (umask 077), $(stat -c %a um002) (umask 002)"; fails=$((fails + 1)); }
# ... and the parent's default ACL where it has one, as mkdir would (it was 0777 less the umask
# whatever the ACL said); set through the xattr, as setfacl may not be installed
mkdir acl && if python3 - acl <<'PY' 2> /dev/null
import os, struct, sys
entry = lambda tag, perm: struct.pack("<HHI", tag, perm, 0xFFFFFFFF)
# version 2; the owner rwx, the group r-x, others nothing
os.setxattr(sys.argv[1], "system.posix_acl_default", struct.pack("<I", 2) + entry(1, 7) + entry(4, 5) + entry(0x20, 0))
PY
then
  mkdir acl/by_mkdir
  (umask 022; "$W" gen rr.lua -o acl/by_gen > /dev/null 2>&1)
  [ "$(stat -c %a acl/by_gen)" = "$(stat -c %a acl/by_mkdir)" ] ||
    { echo "FAIL: -o folder under a default ACL: $(stat -c %a acl/by_gen), mkdir gives $(stat -c %a acl/by_mkdir)"; fails=$((fails + 1)); }
else
  echo "note: no default ACL on this file system; the -o folder's mode under one is not checked"
fi

# the cache folder is a file: said as the cache folder, naming WEFT_CACHE_DIR (it was "<path>: not a folder")
expect 1 "cache folder $T/rr.lua exists but is not a folder: refusing to use it; set WEFT_CACHE_DIR" env WEFT_CACHE_DIR="$T/rr.lua" "$W" build rr.lua -o g11
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

# a WEFT_SOURCE_DIR tree whose generator fails is named as that tree's, exit 2 (it was "a bug in weft")
mkdir -p broken && cp -r "$SRC/gen" "$SRC/templates" broken/ && echo 'error("broken tree")' >> broken/gen/core/weft.lua
expect 2 "(the generator read from $T/broken, WEFT_SOURCE_DIR or the context's source_dir" \
  env WEFT_SOURCE_DIR="$T/broken" "$W" gen rr.lua -o g20

# WEFT_DRIVER_LIB pointing at a library that is no driver at all
z=$(ls /usr/lib/*/libz.so.1 /lib/*/libz.so.1 2> /dev/null | head -1)
[ -n "$z" ] && expect 77 "is not an NVIDIA driver (it has no cuInit): check WEFT_DRIVER_LIB" env WEFT_DRIVER_LIB="$z" "$W" run rr.lua

echo "bad_inputs: $fails failed ($rows exported rows read back)"
[ $fails = 0 ]
