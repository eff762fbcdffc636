#!/usr/bin/env bash
# bench/gemm_rule_rows.sh: the rows a refit of the gemm rule needs, in one device call (repo root,
# build/ carried as for bench/gemm_session.sh): the candidates of this tree's rule and, with
# NEW_SRC, of a copy whose model is changed, each checked and timed beside cuBLASLt
# (bench/gemm_llm.sh) and stored in one tuning database, $OUT/llm.db.  Then, on the host:
#   bash bench/gemm_rule_regret.sh llm.db 10 NAME=VALUE ...
#   NEW_SRC  a copy of gen/ and templates/ (e.g. `cp -r gen templates proto_x/`, then edit
#            proto_x/gen/core/gemm.lua's M.MODEL); unset: this tree only
#   PHASES   "off bf16" (default): off, the 22 shapes off the set below (OFF_SHAPES); bf16, f16:
#            the published set in that dtype; dram: the held-out check of the rule's DRAM scale
#            (gen/core/gemm.lua dram_scale) on an H100 -- the 13 shapes where it moves the pick
#            (the old pick is among the first 8 candidates), and the device's DRAM rate as weft
#            reads it ($OUT/dram.txt).  Then, on the host: MEM_GBS=<that rate> bash
#            bench/gemm_rule_regret.sh llm.db, and without MEM_GBS.
#   B_OFF, B_SET  GEMM_BUDGET of each run (60 and 160 s: a run of the set took ~105-120 s)
#   DRY=1    bench/gemm_llm.sh --dry-run (the candidates and the time estimate, no GPU)
# Each run's logs go to $OUT/<phase><tree>/ and <phase><tree>.txt; at the end they are packed into
# $OUT/logs.tgz (the device returns only a few files).
set -u
O=${OUT:-/tmp/out}
mkdir -p "$O"
. bench/env.sh
# (the sessions' sixteen, and six at M = 100-224 where flat splits compete)
OFF=${OFF_SHAPES:-$GEMM_OFFSET_SHAPES,100x2048x7168,200x3072x12288,160x3072x12288,224x1536x8960,150x5120x13824,200x2048x7168}
# (bench/RESULTS.md, twenty-sixth session: where an H100's DRAM rate moves the rule's pick, none of
# them measured on an H100 before)
DRAM=128x2048x2048,48x2048x5632,128x2048x5632,144x2048x5632,144x3072x9216,48x4096x4096,176x4096x12288,48x6144x6144,48x8192x8192,64x8192x8192,64x7168x7168,48x2560x8192,144x2560x8192
trees="main"
if [ -n "${NEW_SRC:-}" ]; then
  new=$(realpath "$NEW_SRC") || exit 1
  [ -f "$new/gen/core/gemm.lua" ] || { echo "gemm_rule_rows.sh: $new: no gen/core/gemm.lua" >&2; exit 1; }
  trees="new main"
fi
dry=(); [ "${DRY:-0}" = 1 ] && dry=(--dry-run)
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > "$O/gpu.txt"
case " ${PHASES:-off bf16} " in
  *" dram "*) WEFT_AUTO_TABLE=none build/weft suggest tests/configs/auto_gemm.lua 64x4096x4096 > "$O/dram.txt" 2>&1
             grep -o "DRAM [0-9]* GB/s[^;]*\|kernel: .*" "$O/dram.txt" ;;
esac
runs=()
for ph in ${PHASES:-off bf16}; do
  case $ph in
    off) args=(--shapes "$OFF"); budget=${B_OFF:-60} ;;
    bf16|f16) args=(--dtype "$ph"); budget=${B_SET:-160} ;;
    dram) args=(--dtype bf16 --shapes "$DRAM"); budget=${B_OFF:-60} ;;
    *) echo "gemm_rule_rows.sh: PHASES: '$ph': one of off, bf16, f16, dram" >&2; exit 2 ;;
  esac
  for tree in $trees; do
    src=$PWD; [ "$tree" = new ] && src=$new
    WEFT_SOURCE_DIR=$src OUT=$O/$ph$tree GEMM_BUDGET=$budget timeout $((budget + 40)) bash bench/gemm_llm.sh "${dry[@]}" "${args[@]}" \
      --candidates "${CANDIDATES:-10}" --record-db "$O/llm.db" > "$O/$ph$tree.txt" 2>&1
    echo "== $ph, $tree's rule: rc $? at $SECONDS s"
    grep -E "^best/cuBLASLt|^auto/cuBLASLt|FAILED|shapes run|^# [0-9]+ shapes" "$O/$ph$tree.txt" | cut -c1-400
    runs+=("$ph$tree" "$ph$tree.txt")
  done
done
(cd "$O" && tar czf logs.tgz --exclude='cache*' -- "${runs[@]}" && rm -rf -- "${runs[@]}")
