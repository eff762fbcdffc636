#!/usr/bin/env bash
# exports.sh SRC LIBWEFT_SO: libweft.so exports exactly the functions weft.h declares (all named
# weft_*), carries its soname, needs no libcrypto and no driver (libcuda is dlopen'ed), and
# finds the Lua and SQLite it needs beside itself.
SRC=$1 LIB=$2
. "$SRC/tests/install/common.sh"
dir=$(dirname "$LIB")
exported=$(run nm -D --defined-only "$LIB" | awk '{print $3}' | sort -u)
[ -n "$exported" ] || fail "$LIB exports nothing"
others=$(grep -v '^weft_' <<<"$exported" || true)
[ -z "$others" ] || fail "$LIB exports symbols without the weft_ prefix: $(echo $others)"
# the header's functions: comments stripped by the preprocessor, then every weft_x( that is not
# a function-pointer typedef's name
declared=$(run gcc -fpreprocessed -dD -E -P "$SRC/runtime/core/weft.h" | grep -oE '\bweft_[a-z0-9_]+ *\(' \
           | sed 's/ *($//' | sort -u)
[ "$(wc -l <<<"$declared")" -ge 40 ] || fail "found only $(wc -l <<<"$declared") declarations in weft.h: is the parse broken?"
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[ -z "$missing" ] || fail "declared in weft.h but not exported by $LIB: $(echo $missing)"
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
[ -z "$extra" ] || fail "exported by $LIB but not declared in weft.h: $(echo $extra)"
echo "exports: $(wc -l <<<"$exported") functions, exactly weft.h's"

dyn=$(run readelf -d "$LIB")
grep -q 'Library soname: \[libweft.so.0\]' <<<"$dyn" || fail "$LIB: soname is not libweft.so.0"
needed=$(grep NEEDED <<<"$dyn" | sed 's/.*\[\(.*\)\]/\1/')
echo "NEEDED: $(echo $needed)"
for bad in libcrypto libcuda.so libssl; do
  if grep -q "^$bad" <<<"$needed"; then fail "$LIB needs $bad"; fi
done
grep -q '^libnvrtc.so' <<<"$needed" || fail "$LIB does not need libnvrtc (how does it compile?)"
grep -q 'RUNPATH.*\$ORIGIN' <<<"$dyn" || fail "$LIB: no \$ORIGIN in its RUNPATH"
# an empty RUNPATH entry (a leading, doubled or trailing ':') is the current directory to the loader
if grep -Eq 'RUNPATH.*\[(:|.*::|.*:\])' <<<"$dyn"; then fail "$LIB: its RUNPATH has an empty entry: $(grep RUNPATH <<<"$dyn")"; fi
# every NEEDED library resolves, and the two it carries resolve to the copies beside it
deps=$(run ldd "$LIB")
if grep -q 'not found' <<<"$deps"; then fail "$LIB: $(grep 'not found' <<<"$deps")"; fi
# (installed, the copies are in lib/weft/, so that they shadow nothing else in PREFIX/lib)
for so in $(grep -E '^(liblua|libsqlite)' <<<"$needed"); do
  at=$dir
  [ -f "$dir/weft/$so" ] && at=$dir/weft
  [ -f "$at/$so" ] || fail "$LIB needs $so, which is neither beside it nor in $dir/weft"
  grep -q "$so => $(cd "$at" && pwd -P)/$so" <<<"$deps" || fail "$so does not resolve to $at/$so: $(grep "$so" <<<"$deps")"
done
[ "$(readlink "$dir/libweft.so")" = libweft.so.0 ] || fail "libweft.so is not a link to libweft.so.0"
[[ "$(readlink "$dir/libweft.so.0")" == libweft.so.0.* ]] || fail "libweft.so.0 is not a link to libweft.so.0.x.y"
echo "exports: ok"
