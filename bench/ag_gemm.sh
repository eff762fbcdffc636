#!/usr/bin/env bash
# bench/ag_gemm.sh: the ag_gemm family checked, then timed beside cuBLASLt (and, where the ranks
# have GPUs of their own, NCCL all-gather + cuBLASLt) in the same `weft run`: one plain rank,
# then P = 2, 4, 8 ranks under MPS (sharing the GPU on a one-GPU machine; one GPU each where
# there are P).  From the repo root, with build/ built:
#   bench/ag_gemm.sh [CONFIG.lua ... | all]      all (default): examples/ag_gemm*.lua, examples/gemm.lua
# env: OUT (logs, default ./out), NPS (default "2 4 8"), ITERS (default 20), ARGS (more `weft run`
# options, e.g. "--no-time", "--shapes-only --time-shape 2048x2048x2048"), TIMEOUT (s per run).
# A config of family gemm (no ranks) runs at P = 1 only.  Prints every "ag_gemm " row
# (the table bench/RESULTS.md quotes) last; the full logs stay in $OUT.
set -u
out=${OUT:-./out}
mkdir -p "$out"
. bench/env.sh
export WEFT_NCCL_LIB=${WEFT_NCCL_LIB:-$(nccl_lib_default)}
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-bench-cache}
# the scalar variants at 8192^3 on a shared GPU keep peers waiting for seconds: not a hang
export WEFT_SIGNAL_TIMEOUT_MS=${WEFT_SIGNAL_TIMEOUT_MS:-60000}
W=build/weft
cfgs=("$@")
if [ ${#cfgs[@]} -eq 0 ] || [ "${cfgs[0]}" = all ]; then
  cfgs=(examples/ag_gemm*.lua)
  [ -e examples/gemm.lua ] && cfgs+=(examples/gemm.lua)
fi
run() {   # run LOG CMD...: one `weft run`, its exit status appended to its log
  local log=$1; shift
  timeout "${TIMEOUT:-1200}" "$@" >"$log" 2>&1
  echo "rc=$?" >>"$log"
  grep -E "^(ag_gemm |check: .*FAIL|rc=)" "$log" | sed "s|^|$(basename "$log" .log): |"
}
# P = 1 first, before the MPS daemon starts: a plain process
for cfg in "${cfgs[@]}"; do
  run "$out/$(basename "$cfg" .lua)_np1.log" $W run "$cfg" --iters "${ITERS:-20}" ${ARGS:-}
done
. bench/mps.sh
for np in ${NPS:-2 4 8}; do
  for cfg in "${cfgs[@]}"; do
    grep -Eq '^ *family *= *"gemm"' "$cfg" && continue
    run "$out/$(basename "$cfg" .lua)_np${np}.log" $MPIRUN -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -x WEFT_NCCL_LIB ${WEFT_CUBLASLT_LIB:+-x WEFT_CUBLASLT_LIB} \
      -np "$np" $W run "$cfg" --iters "${ITERS:-20}" ${ARGS:-}
  done
done
mps_stop
echo "== ag_gemm rows (logs in $out)"
grep -h "^#ag_gemm" "$out"/*.log | head -1
grep -h "^ag_gemm " "$out"/*.log
grep -l "^rc=[^0]" "$out"/*.log | sed 's/^/FAILED: /'
exit 0
