#!/usr/bin/env bash
# bench/diag_gemm_bounds.sh: where a GEMM tile's main loop spends its time (a diagnostic, not a
# kernel weft ships).  Two patched copies of the sources (WEFT_SOURCE_DIR) are timed beside the
# real kernel, results unchecked:
#   noload: the producer arrives on each stage's full barrier without loading (the consumers'
#           WGMMAs and the ring's hand-shakes alone: the compute + protocol bound);
#   nomma:  the consumers wait for each stage and release it without multiplying (TMA and the
#           ring alone: the load bound).
# Usage (GPU machine, build/ built): bench/diag_gemm_bounds.sh "CONFIG SETS" ... ; DIAG_SHAPES.
set -u
W=$(pwd)/build/weft
O=${OUT:-/tmp/out}
mkdir -p "$O"
. bench/env.sh
shapes=${DIAG_SHAPES:---time-shape 1024x1024x1024 --time-shape 1024x1024x256 --time-shape 8192x1024x1024}
for kind in real noload nomma; do
  src=$(pwd)
  if [ $kind != real ]; then
    src=/tmp/weft_diag_$kind
    rm -rf "$src" && mkdir -p "$src" && cp -r gen templates "$src"/
    python3 - "$src/templates/weft/ag_gemm.cuh" $kind <<'PY'
import re, sys
p, kind = sys.argv[1], sys.argv[2]
s = open(p).read()
if kind == "noload":
    # the producer's k-loop: arrive (count 1) instead of announcing bytes and loading them
    a = s.index("mbar_arrive_expect(full, R::STAGE_BYTES);")
    b = s.index("p.next();", a)
    s = s[:a] + "mbar_arrive(full);\n            " + s[b:]
else:
    s, n = re.subn(r"consume_kblock<[^;]*;", "", s)
    assert n == 1, n
open(p, "w").write(s)
PY
  fi
  for cfg in "$@"; do
    sets=""; for kv in $cfg; do sets="$sets --set $kv"; done
    echo "== $kind: $cfg"
    # shellcheck disable=SC2086
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_diag_cache_$kind $W run examples/gemm.lua $sets --no-check --shapes-only \
      $shapes --iters 30 2>&1 | tee -a "$O/diag_$kind.log" | grep -E "^ag_gemm|rror"
  done
done
