#!/usr/bin/env bash
# bench/deep_ring_probe.sh: the GEMM rule with deeper rings for narrow 64-row tiles
# (gen/core/gemm.lua's MAX_STAGES_NARROW, held at MAX_STAGES) against the rule as it is, on the
# set's shapes where the deeper ring moves the pick (an H100's: M = 64 and 128, bf16 and f16), in
# one device call (repo root, build/python carried).  Two bench/gemm_llm.sh runs, the second with
# WEFT_SOURCE_DIR pointing at a copy of gen/ and templates/ with the constant raised; each prints
# best and auto against cuBLASLt timed in its own process.  Logs under $OUT/deep_old, $OUT/deep_new.
#   DEEP (13), SHAPES (the six), ROUNDS (8), GEMM_BUDGET per run (100)
set -u
OUT=${OUT:-/tmp/deep_ring}
mkdir -p "$OUT" || exit 1
DEEP=${DEEP:-13}
SHAPES=${SHAPES:-64x6144x4096,64x4096x14336,64x10240x8192,64x8192x8192,128x6144x4096,128x4096x4096}
src=$(mktemp -d /tmp/weft-deep-XXXXXX) || exit 1
trap 'rm -rf "$src"' EXIT
cp -r gen templates "$src"/ || exit 1
sed -i "s/^M.MAX_STAGES_NARROW = [0-9]*/M.MAX_STAGES_NARROW = $DEEP/" "$src/gen/core/gemm.lua"
grep -q "^M.MAX_STAGES_NARROW = $DEEP\$" "$src/gen/core/gemm.lua" || { echo "deep_ring_probe: MAX_STAGES_NARROW not found in gen/core/gemm.lua" >&2; exit 1; }
for run in old new; do
  if [ $run = new ]; then export WEFT_SOURCE_DIR=$src; fi
  OUT=$OUT/deep_$run GEMM_BUDGET=${GEMM_BUDGET:-100} bash bench/gemm_llm.sh --shapes "$SHAPES" --dtype bf16,f16 \
    --candidates 2 --rounds "${ROUNDS:-8}" > "$OUT/deep_$run.txt" 2>&1
  echo "== deep_$run: rc $?"; grep -E "^(best|auto)/cuBLASLt" "$OUT/deep_$run/gemm_llm.log"
done
