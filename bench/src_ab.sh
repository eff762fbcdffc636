#!/usr/bin/env bash
# bench/src_ab.sh: family gemm configs built from several source trees, timed in turn (GPU
# machine, repo root, build/weft carried).  A tree is a copy of gen/ and templates/ read through
# WEFT_SOURCE_DIR ("." is this one); DIAG adds bench/diag_gemm_bounds.sh's patched copies of this
# tree (noload, nomma, noepi, ...).  First every config of every tree runs once at 1000^3 and at
# the first shape, all in parallel (they compile; the trees that compute are checked there:
# random data, C poisoned, a double reference); then ROUNDS rounds, each running every tree's
# every config in turn at SHAPES, each `weft run` timing cuBLASLt in the same process.  Prints
# each (config, shape, tree)'s median graph-replay time with its rounds and cuBLASLt's.
#   SRCS   trees ("old_src ."), DIAG (patch kinds, ""), CFGS ("k=v ...;..." over examples/gemm.lua),
#   SHAPES ("3072x3072x3072 16384x6144x4096"), ROUNDS (3), ITERS (30), OUT (/tmp/src_ab)
# --dry-run: print the runs, run none (the host test).  --table LOG: the table of an earlier
# run's $OUT/all.log.
set -u
set -f   # (config words are split into --set pairs, never globbed)
# the median per (config, shape, tree) of the rounds' logs (`weft run`'s table rows)
src_ab_table() {
  python3 - "$1" <<'PY'
import collections, re, statistics, sys
rows, cur = collections.defaultdict(list), None
for line in open(sys.argv[1]):
    m = re.match(r"== r\d+ (\S+) cfg(\d+)", line)
    if m:
        cur = (int(m.group(2)), m.group(1))
    elif line.startswith("ag_gemm ") and cur:
        f = line.split()   # ... M N K P iters weft_ev weft_gr TF_ev TF_gr cublas_ev cublas_gr ...
        rows[(cur[0], "x".join(f[4:7]), cur[1])].append((float(f[10]), float(f[14]) if f[14] != "-" else float("nan")))
print("cfg  shape  tree  weft_gr_median_us  [rounds]  cuBLASLt_gr [rounds]")
for (c, s, t), v in sorted(rows.items()):
    print(c, s, t, "%.1f" % statistics.median(x[0] for x in v), [x[0] for x in v],
          "%.1f" % statistics.median(x[1] for x in v), [x[1] for x in v])
PY
}
if [ "${1:-}" = "--table" ]; then
  [ -r "${2:-}" ] || { echo "src_ab.sh: --table: cannot read '${2:-}' (an earlier run's all.log)" >&2; exit 2; }
  src_ab_table "$2"
  exit
fi
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
O=${OUT:-/tmp/src_ab}
mkdir -p "$O" || exit 1
W=${WEFT:-$PWD/build/weft}
IFS=';' read -r -a CFG <<<"${CFGS:-b_layout=col tile.m=128 tile.n=192 stages=4 cluster.m=2 epilogue=tma}"
read -r -a SH <<<"${SHAPES:-3072x3072x3072 16384x6144x4096}"
srcs=()
for s in ${SRCS:-.}; do
  [ -f "$s/templates/weft/gemm_kernel.cuh" ] || { echo "src_ab.sh: SRCS: '$s' holds no copy of gen/ and templates/" >&2; exit 2; }
  srcs+=("$s")
done
if [ -n "${DIAG:-}" ]; then
  DIAG_PATCH_ONLY=1 DIAG_KINDS="$DIAG" DIAG_TMP="$O/diag" bash "$here/diag_gemm_bounds.sh" > "$O/patch.log" 2>&1 ||
    { echo "src_ab.sh: DIAG: the patches failed (their log: $O/patch.log)" >&2; cat "$O/patch.log" >&2; exit 2; }
  for k in $DIAG; do srcs+=("$O/diag/weft_diag_${k//+/_}"); done
fi
tag() { case $1 in .) echo this;; */weft_diag_*) echo "${1##*/weft_diag_}";; *) basename "$1";; esac; }
run() {   # tree round config-index
  local src=$1 r=$2 i=$3 t sets chk x shapes=()
  t=$(tag "$src")
  sets=$(set_args "${CFG[$i]}")
  chk=--no-check
  [ "$r" = 0 ] && case $t in noload*|nomma*|nored*|noepi*) ;; *) chk="--shape 1000x1000x1000";; esac
  if [ "$r" = 0 ]; then shapes=(--time-shape "${SH[0]}"); else for x in "${SH[@]}"; do shapes+=(--time-shape "$x"); done; fi
  if [ $dry = 1 ]; then echo "WEFT_SOURCE_DIR=$src $W run examples/gemm.lua $sets $chk --shapes-only ${shapes[*]}"; return; fi
  # shellcheck disable=SC2086
  { echo "== r$r $t cfg$i: ${CFG[$i]}"
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR="$O/cache_$t" timeout 120 "$W" run examples/gemm.lua $sets $chk --shapes-only \
      "${shapes[@]}" --iters "${ITERS:-30}" 2>&1; } > "$O/r${r}_${t}_$i.log"
}
for s in "${srcs[@]}"; do for i in "${!CFG[@]}"; do run "$s" 0 "$i" & done; done
wait
[ $dry = 1 ] || grep -h -E "^== |check:|FAIL|rror" "$O"/r0_*.log
for r in $(seq "${ROUNDS:-3}"); do for s in "${srcs[@]}"; do for i in "${!CFG[@]}"; do run "$s" "$r" "$i"; done; done; done
[ $dry = 1 ] && exit 0
cat "$O"/r[1-9]*_*.log > "$O/all.log"
src_ab_table "$O/all.log"
