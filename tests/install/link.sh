#!/usr/bin/env bash
# link.sh SRC PREFIX OUT WITH_MPI: a user's C program (tests/link/app.c) built against an install
# at PREFIX with the README's link lines exactly as written there, static and shared, then with
# pkg-config; each program runs and must say ok.  Then the single-rank callback world
# (tests/link/world.c), static (+ -lmpi where weft has MPI, as the README says).
SRC=$1 PREFIX=$2 OUT=$3 WITH_MPI=$4
. "$SRC/tests/install/common.sh"
export PREFIX
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT"
cp "$SRC/tests/link/app.c" app.c
export WEFT_CACHE_DIR=$OUT/cache
check_app() {   # the program ./app links libweft from PREFIX and generates both kernels
  run ./app "$SRC/examples/row_softmax.lua" | tee app.out
  grep -q "^weft_row_softmax_.*args y:ptr x:ptr rows:i32 cols:i32" app.out || fail "app: no row_softmax manifest"
  grep -q "ok$" app.out || fail "app did not say ok"
}
static=$(readme_line 'cc app.c -I$PREFIX/include -L$PREFIX/lib -l:libweft.a')
shared=$(readme_line 'cc app.c -I$PREFIX/include -L$PREFIX/lib -lweft')
echo "+ $static" && bash -c "$static"
ldd ./app > ldd.out; grep -q libweft ldd.out && fail "the static app needs a libweft shared library"
check_app
rm -f app
echo "+ $shared" && bash -c "$shared"
ldd ./app > ldd.out; grep -q "libweft.so.0 => $PREFIX/lib/libweft.so.0" ldd.out || fail "the shared app does not load $PREFIX/lib/libweft.so.0"
check_app
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
for pc in weft weft-static; do
  flags=$(run pkg-config --cflags --libs $pc)
  run cc app.c $flags -Wl,-rpath,$PREFIX/lib -o app
  check_app
done
cp "$SRC/tests/link/world.c" world.c
mpi=""
[ "$WITH_MPI" = ON ] && mpi=-lmpi
run cc world.c -I$PREFIX/include -L$PREFIX/lib -l:libweft.a -L/usr/local/cuda/lib64 -lnvrtc -lm -ldl -lpthread $mpi -o world
run ./world
echo "link: ok"
