#!/usr/bin/env bash
# nompi.sh SRC OUT: weft built as if Open MPI were not installed.  Asking for MPI then is a clear
# configure error; without it, the library and the CLI build, generate, refuse to run under
# mpirun, need no libmpi, and link the README's static line without -lmpi (tests/install/link.sh).
SRC=$1 OUT=$2
. "$SRC/tests/install/common.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
        -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF)
if run cmake -S "$SRC" -B "$OUT/asked" "${common[@]}" -DWEFT_WITH_MPI=ON > "$OUT/asked.log" 2>&1; then
  fail "WEFT_WITH_MPI=ON without MPI configured"
fi
grep -q "WEFT_WITH_MPI=ON but no MPI for C was found" "$OUT/asked.log" || { cat "$OUT/asked.log"; fail "no clear message"; }
B=$OUT/build
run cmake -S "$SRC" -B "$B" "${common[@]}" -DWEFT_WITH_MPI=OFF > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; fail configure; }
run cmake --build "$B" -j2 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; fail build; }
for f in "$B/libweft.so" "$B/weft"; do
  if run readelf -d "$f" | grep NEEDED | grep -i mpi; then fail "$f needs MPI"; fi
done
nm -D "$B/libweft.so" > "$OUT/nm.out"; if grep -q ' U MPI_' "$OUT/nm.out"; then fail "libweft.so refers to MPI_ symbols"; fi
export WEFT_CACHE_DIR=$OUT/cache
run "$B/weft" gen "$SRC/examples/row_softmax.lua" -o "$OUT/gen" || fail "weft gen"
ls "$OUT"/gen/*.cu "$OUT"/gen/*.json > /dev/null || fail "weft gen wrote nothing"
rc=0
OMPI_COMM_WORLD_SIZE=2 "$B/weft" gen "$SRC/examples/row_softmax.lua" -o "$OUT/gen2" 2> "$OUT/ranks.err" || rc=$?
cat "$OUT/ranks.err"
[ "$rc" = 2 ] && grep -q "built without MPI (WEFT_WITH_MPI=OFF)" "$OUT/ranks.err" || fail "weft under mpirun: exit $rc"
run cmake --install "$B" --prefix "$OUT/prefix" > /dev/null
run bash "$SRC/tests/install/link.sh" "$SRC" "$OUT/prefix" "$OUT/link" OFF
echo "nompi: ok"
