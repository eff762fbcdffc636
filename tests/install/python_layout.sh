#!/usr/bin/env bash
# python_layout.sh SRC DIR: DIR (build/python/weft, or the installed package) holds every .py
# of python/weft/ (subpackages too) as it is in the sources, and libweft.so.0 with the libraries it carries as
# regular files (copies: the build folder is copied to the GPU machine), loadable from there.
SRC=$1 DIR=$2
. "$SRC/tests/install/common.sh"
[ -d "$DIR" ] || fail "$DIR: no such folder"
n=0
while IFS= read -r rel; do
  run cmp "$SRC/python/weft/$rel" "$DIR/$rel" || fail "$DIR/$rel differs from (or lacks) python/weft/$rel"
  n=$((n + 1))
done < <(cd "$SRC/python/weft" 2>/dev/null && find . -name '*.py' | sed 's|^\./||' | sort)
for so in libweft.so.0 $(readelf -d "$DIR/libweft.so.0" | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | grep -E '^(liblua|libsqlite)'); do
  [ -f "$DIR/$so" ] && [ ! -L "$DIR/$so" ] || fail "$DIR/$so is not a regular file"
done
# the package's library never needs MPI (Python makes its worlds with weft_world_create_with)
if readelf -d "$DIR/libweft.so.0" | grep NEEDED | grep -qi mpi; then fail "$DIR/libweft.so.0 needs an MPI library"; fi
deps=$(run ldd "$DIR/libweft.so.0")
if grep -q 'not found' <<<"$deps"; then fail "$DIR/libweft.so.0: $(grep 'not found' <<<"$deps")"; fi
echo "python layout: $n .py files, libweft.so.0 and its libraries in $DIR: ok"
