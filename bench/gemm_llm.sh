#!/usr/bin/env bash
# bench/gemm_llm.sh [--dry-run] [ARGS of bench/gemm_llm.py...]: issue 19's GEMM targets (weft's best
# and auto against cuBLASLt and torch on the LLM shape set) in one device call of at most 600 s.
# Run from the repo root on the GPU machine with build/python carried (the package and its
# libweft.so.0, which embeds the generator).  No ARGS: --quick (the 44-shape bf16 set).
#   GEMM_BUDGET  seconds of this call for gemm_llm.py (--budget-s: no shape starts past it; default 250)
#   JOBS         compile threads (16), PY (python3 with torch), OUT (/tmp/weft_gemm_llm)
#   GEMM_STATE   the kernel cache (build/gemm-state: kept while the machine stays warm, so a second
#                call with other ARGS compiles only what is new)
# Logs and the TSVs land under $OUT: gemm_llm.log (the table, last), progress.log (one line per
# shape with its elapsed time), gemm_llm.tsv, gemm_llm_kernels.tsv (every candidate), gemm_llm.json,
# smi.csv (nvidia-smi's clock and power samples; bench/smi_clock.py).
set -u
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
[ $# = 0 ] && set -- --quick
OUT=${OUT:-/tmp/weft_gemm_llm}
STATE=${GEMM_STATE:-$PWD/build/gemm-state}
BUDGET=${GEMM_BUDGET:-250}
JOBS=${JOBS:-16}
PY=${PY:-python3}
mkdir -p "$OUT" "$STATE/cache"
. bench/env.sh   # NVRTC's path; NVLink multicast off for this process and its children
export WEFT_CACHE_DIR=$STATE/cache
export PYTHONPATH=$PWD/build/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1
# a crash (two runs aborted at exit, after writing everything) prints the Python stack to progress.log
export PYTHONFAULTHANDLER=1
# auto without a table or a tuning database (gemm_llm.py also sets these): the rule's choice
export WEFT_AUTO_TABLE=none
unset WEFT_AUTOTUNE
if [ ! -f build/python/weft/libweft.so.0 ]; then echo "build/python/weft/libweft.so.0 missing: build, and carry build/python" >&2; exit 1; fi
if [ $dry = 1 ]; then
  exec "$PY" bench/gemm_llm.py --dry-run --jobs "$JOBS" --out "$OUT" "$@"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
t0=$SECONDS
# --budget-s stops starting shapes (the report names those left); timeout only catches a hang
timeout $((BUDGET + 90)) "$PY" bench/gemm_llm.py --jobs "$JOBS" --budget-s "$BUDGET" --out "$OUT" "$@" \
  > "$OUT/gemm_llm.log" 2> "$OUT/progress.log" < /dev/null
rc=$?
echo "== bench/gemm_llm.py $*: rc $rc in $((SECONDS - t0)) s (budget $BUDGET s); logs in $OUT"
grep -E "^# chose|^# compile FAILED|^# device|^# [0-9]+ shapes run" "$OUT/gemm_llm.log"
[ $rc != 0 ] && tail -30 "$OUT/progress.log"
sed -n '/^## GEMM/,$p' "$OUT/gemm_llm.log"
exit $rc
