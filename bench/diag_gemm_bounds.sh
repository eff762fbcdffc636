#!/usr/bin/env bash
# bench/diag_gemm_bounds.sh: where a GEMM tile's main loop spends its time (a diagnostic, not a
# kernel weft ships).  Patched copies of the sources (WEFT_SOURCE_DIR) are timed beside the real
# kernel (those that skip work unchecked):
#   noload: the producer arrives on each stage's full barrier without loading (the consumers'
#           WGMMAs and the ring's hand-shakes alone: the compute + protocol bound);
#   nomma:  the consumers wait for each stage and release it without multiplying (TMA and the
#           ring alone: the load bound).
# Patches combine with '+'; a patch that finds nothing to change stops the script.  Usage (GPU
# machine, build/ built):
#   DIAG_KINDS="real noload nomma" DIAG_SHAPES="--time-shape ..." bench/diag_gemm_bounds.sh "CONFIG SETS" ...
set -u
W=$(pwd)/build/weft
O=${OUT:-/tmp/out}
mkdir -p "$O"
. bench/env.sh
shapes=${DIAG_SHAPES:---time-shape 1024x1024x1024 --time-shape 1024x1024x256 --time-shape 8192x1024x1024}
for kind in ${DIAG_KINDS:-real noload nomma}; do
  src=$(pwd)
  if [ $kind != real ]; then
    src=/tmp/weft_diag_${kind//+/_}
    rm -rf "$src" && mkdir -p "$src" && cp -r gen templates "$src"/
    python3 - "$src/templates/weft/ag_gemm.cuh" $kind <<'PY' || exit 1
import re, sys
p, kinds = sys.argv[1], sys.argv[2].split("+")
s = open(p).read()
for kind in kinds:
    if kind == "noload":
        # the producer's k-loop: arrive (count 1) instead of announcing bytes and loading them
        a = s.index("mbar_arrive_expect(full, R::STAGE_BYTES);")
        b = s.index("p.next();", a)
        s = s[:a] + "mbar_arrive(full);\n            " + s[b:]
    elif kind == "nomma":
        s, n = re.subn(r"consume_kblock<[^;]*;", "", s)
        assert n == 1, n
    else:
        sys.exit("unknown patch " + kind)
open(p, "w").write(s)
PY
  fi
  for cfg in "$@"; do
    sets=$(set_args "$cfg")
    echo "== $kind: $cfg"
    chk="--shape 1000x1000x1000"   # checked on an uneven shape too, unless it computes nothing right
    case $kind in *noload*|*nomma*) chk=--no-check;; esac
    # shellcheck disable=SC2086
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_diag_cache_${kind//+/_} $W run examples/gemm.lua $sets $chk --shapes-only \
      $shapes --iters 30 2>&1 | tee -a "$O/diag_${kind//+/_}.log" | grep -E "^ag_gemm|rror|check: .*(PASS|FAIL)"
  done
done
