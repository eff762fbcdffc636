#!/usr/bin/env bash
# bench/src_ab.sh: family gemm configs built from several source trees, timed in turn (GPU
# machine, repo root, build/weft carried).  A tree is a copy of gen/ and templates/ read through
# WEFT_SOURCE_DIR ("." is this one); DIAG adds bench/diag_gemm_bounds.sh's patched copies of this
# tree (noload, nomma, noepi, ...).  First every config of every tree runs once at 1000^3 and at
# the first shape, all in parallel (they compile; the trees that compute are checked there:
# random data, C poisoned, a double reference); then ROUNDS rounds, each running every tree's
# every config in turn at SHAPES, each `weft run` timing cuBLASLt in the same process.  Prints
# each (config, shape, tree)'s median graph-replay time with its rounds and cuBLASLt's.
#   SRCS   trees ("."; each named by its folder's name, "this" for ".", and no two alike),
#   DIAG (patch kinds, ""; their copies are not checked: they compute nothing right), CFGS ("k=v
#   ...;..." over examples/gemm.lua), SHAPES ("3072x3072x3072 16384x6144x4096"), ROUNDS (3),
#   ITERS (30), CHECK_SHAPE (round 0's checked shape, 1000x1000x1000), OUT (/tmp/src_ab: its earlier
#   rounds' logs are removed first), WEFT (build/weft)
# --dry-run: print the runs, run none (the host test).  --table LOG: the table of an earlier
# run's $OUT/all.log.
set -u
set -f   # (config words are split into --set pairs, never globbed)
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
# the median per (config, shape, tree) of the rounds' logs (their headers, and `weft run`'s timing
# rows as env.sh's GEMM_RUN_ROW reads them)
src_ab_table() {
  awk '/^== r[0-9]/ { print; next } '"$GEMM_RUN_ROW" "$1" | python3 -c "$(cat <<'PY'
import collections, re, statistics, sys
rows, cur = collections.defaultdict(list), None
for line in sys.stdin:
    m = re.match(r"== r\d+ (\S+) cfg(\d+)", line)
    if m:
        cur = (int(m.group(2)), m.group(1))
    elif cur:   # "  MxNxK weft US cublas US ratio R"
        f = line.split()
        num = lambda x: float(x) if x != "-" else float("nan")
        rows[(cur[0], f[0], cur[1])].append((num(f[2]), num(f[4])))
print("cfg  shape  tree  weft_gr_median_us  [rounds]  cuBLASLt_gr [rounds]  (rounds that timed)")
for (c, s, t), v in sorted(rows.items()):
    print(c, s, t, "%.1f" % statistics.median(x[0] for x in v), [x[0] for x in v],
          "%.1f" % statistics.median(x[1] for x in v), [x[1] for x in v], "n=%d" % len(v))
PY
)"
}
if [ "${1:-}" = "--table" ]; then
  [ -r "${2:-}" ] || { echo "src_ab.sh: --table: cannot read '${2:-}' (an earlier run's all.log)" >&2; exit 2; }
  src_ab_table "$2"
  exit
fi
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
O=${OUT:-/tmp/src_ab}
mkdir -p "$O" || exit 1
W=${WEFT:-$PWD/build/weft}
IFS=';' read -r -a CFG <<<"${CFGS:-b_layout=col tile.m=128 tile.n=192 stages=4 cluster.m=2 epilogue=tma}"
read -r -a SH <<<"${SHAPES:-3072x3072x3072 16384x6144x4096}"
srcs=() tags=() checked=()   # each tree, its name in the logs, whether it computes (checked in round 0)
add_tree() {
  local t
  for t in "${tags[@]}"; do
    [ "$t" != "$2" ] || { echo "src_ab.sh: two trees named '$2' (their logs would mix): name the copies apart" >&2; exit 2; }
  done
  srcs+=("$1") tags+=("$2") checked+=("$3")
}
for s in ${SRCS:-.}; do
  [ -f "$s/templates/weft/gemm_kernel.cuh" ] || { echo "src_ab.sh: SRCS: '$s' holds no copy of gen/ and templates/" >&2; exit 2; }
  if [ "$s" = . ]; then add_tree . this 1; else add_tree "$s" "$(basename "$s")" 1; fi
done
if [ -n "${DIAG:-}" ]; then
  DIAG_PATCH_ONLY=1 DIAG_KINDS="$DIAG" DIAG_TMP="$O/diag" bash "$here/diag_gemm_bounds.sh" > "$O/patch.log" 2>&1 ||
    { echo "src_ab.sh: DIAG: the patches failed (their log: $O/patch.log)" >&2; cat "$O/patch.log" >&2; exit 2; }
  for k in $DIAG; do add_tree "$O/diag/weft_diag_${k//+/_}" "${k//+/_}" 0; done
fi
log() { echo "$O/r$1_${tags[$2]}_$3.log"; }   # round, tree, config
run() {   # round tree config (indices)
  local r=$1 j=$2 i=$3 sets chk=--no-check x shapes=()
  sets=$(set_args "${CFG[$i]}")
  [ "$r" = 0 ] && [ "${checked[$j]}" = 1 ] && chk="--shape ${CHECK_SHAPE:-1000x1000x1000}"
  if [ "$r" = 0 ]; then shapes=(--time-shape "${SH[0]}"); else for x in "${SH[@]}"; do shapes+=(--time-shape "$x"); done; fi
  if [ $dry = 1 ]; then echo "WEFT_SOURCE_DIR=${srcs[$j]} $W run examples/gemm.lua $sets $chk --shapes-only ${shapes[*]}"; return; fi
  # shellcheck disable=SC2086
  { echo "== r$r ${tags[$j]} cfg$i: ${CFG[$i]}"
    WEFT_SOURCE_DIR=${srcs[$j]} WEFT_CACHE_DIR="$O/cache_${tags[$j]}" timeout 120 "$W" run examples/gemm.lua $sets $chk \
      --shapes-only "${shapes[@]}" --iters "${ITERS:-30}" 2>&1; echo "== rc $?"; } > "$(log "$r" "$j" "$i")"
}
rounds=$(seq 0 "${ROUNDS:-3}")
if [ $dry = 0 ]; then   # (an earlier run's logs in this OUT would join the table)
  for r in $rounds; do for j in "${!srcs[@]}"; do for i in "${!CFG[@]}"; do rm -f "$(log "$r" "$j" "$i")"; done; done; done
fi
for j in "${!srcs[@]}"; do for i in "${!CFG[@]}"; do run 0 "$j" "$i" & done; done
wait
if [ $dry = 0 ]; then   # round 0's checks, and a run that failed (a config refused, no GPU, a wrong answer) stops it
  bad=0
  for j in "${!srcs[@]}"; do for i in "${!CFG[@]}"; do
    f=$(log 0 "$j" "$i")
    grep -h -E "^== r|check:|FAIL|rror" "$f"
    # (a DIAG copy computes nothing right: `weft run` marks its timing rows FAIL and exits 1, which
    # is no failure here while it timed; on the GPU every run of one stopped the script)
    grep -qx "== rc 0" "$f" || { [ "${checked[$j]}" = 0 ] && grep -qx "== rc 1" "$f" && awk "$GEMM_RUN_ROW" "$f" | grep -q .; } ||
      { bad=1; echo "src_ab.sh: ${tags[$j]}'s config $i failed ($(grep '^== rc' "$f")); its log ($f) ends:" >&2; tail -3 "$f" >&2; }
  done; done
  [ $bad = 0 ] || exit 1
fi
for r in $(seq "${ROUNDS:-3}"); do for j in "${!srcs[@]}"; do for i in "${!CFG[@]}"; do run "$r" "$j" "$i"; done; done; done
[ $dry = 1 ] && exit 0
for r in $(seq "${ROUNDS:-3}"); do for j in "${!srcs[@]}"; do for i in "${!CFG[@]}"; do cat "$(log "$r" "$j" "$i")"; done; done; done > "$O/all.log"
src_ab_table "$O/all.log"
