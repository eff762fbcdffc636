#!/usr/bin/env bash
# python_layout.sh SRC DIR: DIR (build/python/weft, or the installed package) holds every
# python/weft/*.py as it is in the sources, and libweft.so.0 with the libraries it carries as
# regular files (copies: the build folder is copied to the GPU machine), loadable from there.
SRC=$1 DIR=$2
. "$SRC/tests/install/common.sh"
[ -d "$DIR" ] || fail "$DIR: no such folder"
n=0
for py in "$SRC"/python/weft/*.py; do
  [ -e "$py" ] || continue
  run cmp "$py" "$DIR/$(basename "$py")" || fail "$DIR/$(basename "$py") differs from (or lacks) $py"
  n=$((n + 1))
done
for so in libweft.so.0 $(readelf -d "$DIR/libweft.so.0" | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | grep -E '^(liblua|libsqlite)'); do
  [ -f "$DIR/$so" ] && [ ! -L "$DIR/$so" ] || fail "$DIR/$so is not a regular file"
done
deps=$(run ldd "$DIR/libweft.so.0")
if grep -q 'not found' <<<"$deps"; then fail "$DIR/libweft.so.0: $(grep 'not found' <<<"$deps")"; fi
echo "python layout: $n .py files, libweft.so.0 and its libraries in $DIR: ok"
