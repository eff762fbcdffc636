#!/usr/bin/env bash
# cmake_project.sh SRC PROJECT OUT [cmake args...]: configure and build a user's CMake project
# (tests/downstream: find_package against an install; tests/subproject: add_subdirectory of the
# sources) in OUT, then run every program it built.
SRC=$1 PROJ=$2 OUT=$3
shift 3
. "$SRC/tests/install/common.sh"
rm -rf "$OUT" && mkdir -p "$(dirname "$OUT")"
run cmake -S "$PROJ" -B "$OUT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT=/usr/local/cuda "$@" > "$OUT.log" 2>&1 \
  || { cat "$OUT.log"; fail "configure"; }
run cmake --build "$OUT" -j2 >> "$OUT.log" 2>&1 || { tail -40 "$OUT.log"; fail "build"; }
export WEFT_CACHE_DIR=$OUT/cache
n=0
for app in "$OUT"/app "$OUT"/app_static; do
  [ -x "$app" ] || continue
  run "$app" "$SRC/examples/row_softmax.lua" | tee "$app.out"
  grep -q "ok$" "$app.out" || fail "$app did not say ok"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "$OUT: no program built"
echo "cmake project: $n programs ok"
