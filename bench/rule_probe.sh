#!/usr/bin/env bash
# bench/rule_probe.sh: the auto rule's pick (WEFT_AUTO_TABLE=none) at each shape from two source
# trees -- OLD_SRC (default: this tree) and NEW_SRC (a copy with the model changed) -- each run,
# checked and timed beside cuBLASLt in one process, on the GPU machine (build/ built and carried).
#   NEW_SRC=proto_rfm SHAPES="130x1536x8960 ..." OUT=$OUT bash bench/rule_probe.sh
# Prints per shape and tree: weft / cuBLASLt (us), their ratio, the checks failed, the kernel.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
. bench/env.sh
OLD=$(realpath "${OLD_SRC:-.}"); NEW=$(realpath "${NEW_SRC:?NEW_SRC: the changed copy of gen/ and templates/}")
for d in "$OLD" "$NEW"; do [ -f "$d/gen/core/gemm.lua" ] || { echo "rule_probe.sh: $d: no gen/core/gemm.lua" >&2; exit 1; }; done
printf 'return { family = "gemm", dtype = "%s", b_layout = "col" }\n' "${DTYPE:-bf16}" > "$O/rule_cfg.lua"
for s in ${SHAPES:?SHAPES: MxNxK ...}; do
  for v in new old; do
    src=$NEW; [ $v = old ] && src=$OLD
    WEFT_SOURCE_DIR=$src WEFT_CACHE_DIR=/tmp/weft_rule_$v WEFT_AUTO_TABLE=none timeout 60 build/weft run "$O/rule_cfg.lua" --auto \
      --shapes-only --time-shape "$s" --iters "${ITERS:-30}" > "$O/r.log" 2>&1
    cat "$O/r.log" >> "$O/rule_$v.log"
    k=$(grep -m1 -oE "weft_gemm_[a-z0-9_]+" "$O/r.log" | sed 's/weft_gemm_[a-z0-9]*_bcol_//; s/_cooperative//; s/_l2p[0-9]*_stk0//')
    awk -v v=$v -v k="$k" -v f="$(grep -c FAIL "$O/r.log")" '$1=="ag_gemm"{printf "%s %sx%sx%s weft %s cublas %s ratio %s fail %s %s\n", v, $5, $6, $7, $11, $15, $19, f, k}' "$O/r.log"
    grep -qE "^ag_gemm" "$O/r.log" || { echo "$v $s: no time"; grep -iE "error|fail" "$O/r.log" | head -2 | cut -c1-200; }
  done
done
