#!/usr/bin/env bash
# tests/docs/env_documented.sh SRC: every WEFT_* variable the library, the CLI or the Python package
# reads (a "WEFT_..." string in runtime/ or python/weft/) has a row in README.md's environment
# table (the table under "| variable | effect |"), and every row there names a variable that
# something reads (those, or the bench and scripts shell files).
set -u
src=$1
read_vars=$(grep -rhoE '"WEFT_[A-Z0-9_]+"' "$src/runtime" "$src/python/weft" | tr -d '"' | sort -u)
table_vars=$(awk '/^\| variable \| effect \|/ { on = 1; next } on && !/^\|/ { exit } on' "$src/README.md" |
             cut -d'|' -f2 | grep -oE 'WEFT_[A-Z0-9_]+' | sort -u)
[ -n "$read_vars" ] || { echo "no WEFT_ variable found under $src/runtime: wrong folder?"; exit 1; }
[ -n "$table_vars" ] || { echo "no environment table (| variable | effect |) found in $src/README.md"; exit 1; }
rc=0
for v in $(comm -23 <(printf '%s\n' "$read_vars") <(printf '%s\n' "$table_vars")); do
  echo "README.md's environment table has no row for $v (read in: $(grep -rlE "\"$v\"" "$src/runtime" "$src/python/weft" |
        sed "s|^$src/||" | tr '\n' ' '))"
  rc=1
done
for v in $(comm -13 <(printf '%s\n' "$read_vars") <(printf '%s\n' "$table_vars")); do
  if ! grep -rqw --include="*.sh" -- "$v" "$src/bench" "$src/scripts"; then
    echo "README.md's environment table names $v, which nothing under runtime/, python/weft, bench/ or scripts/ reads"
    rc=1
  fi
done
[ $rc = 0 ] && echo "the $(printf '%s\n' "$read_vars" | wc -l) variables read are in README.md's environment table"
exit $rc
