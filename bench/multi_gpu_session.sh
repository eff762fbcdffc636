#!/usr/bin/env bash
# bench/multi_gpu_session.sh: issue 22 on a machine with several H200s (device kinds nvidia-h200-x2,
# -x4, -x8): one rank per GPU, no MPS daemon, NVLink multicast off (bench/env.sh).  Repo root, with
# build/ carried (build/weft, build/nccl_bench, build/python, the ctest files).
#   PHASES (default "ceiling check torchrun allreduce arn mrs"; run them over several calls when
#   one call's ten minutes do not hold them all):
#     ceiling    nvidia-smi topo -m, peer access between every pair, copy bandwidth between two
#                GPUs (bench/multi_gpu.sh's first step)
#     check      ctest's MPS tests (label mps) at 2 ranks and at P (CHECK_COUNTS="1 2 3 4": others),
#                here one rank per GPU: allreduce, reduce_scatter, all_gather, gemm_rs, gemm_ar,
#                allreduce_norm, ag_gemm; bit-identity, and the muted-rank timeouts.
#                CHECK_NAMES narrows them (a pattern for the part between "mps." and ".npN",
#                e.g. "gemm_rs.*|arn.*"); at P = 8 split them over calls
#     torchrun   tests/python/dist/test_comm.py under torchrun at P = the GPUs (and at 2 when
#                there are more), checked against the float64 reference and against NCCL
#     allreduce  weft's allreduce beside ncclAllReduce and NCCL's symmetric kernels from 8 B to
#                256 MB (bench/multi_gpu.sh's third step, bench/compare_nccl.py's table)
#     arn        all_reduce_rms_norm against NCCL's allreduce + torch's add and rms_norm
#                (bench/arn_torch.py), then NCCL's symmetric allreduce alone at the same bytes
#     mrs        matmul_reduce_scatter fused and unfused against torch.matmul + NCCL's
#                reduce_scatter (bench/mrs_torch.py) at the issue's shapes (MRS_SHAPES)
#     extra      with 4 or 8 GPUs: bench/multi_gpu.sh's allreduce correctness matrix, and
#                bench/dev_ag_gemm_once.sh's one-rank-per-GPU phase (the seed's 1024^3 table and
#                the large all-gather + GEMM shapes beside NCCL + cuBLASLt)
# Every phase is bounded by one deadline, BUDGET_S (default 560) from the start, so a call that
# the device tool would kill at 600 s still writes its summary.  Logs under
# /tmp/weft-mgpu-session/<phase>/ (WEFT_MGPU_WORK); $OUT gets only summary.txt, which opens with the
# date, the GPUs and the commit (WEFT_COMMIT where the copy has no .git), and
# multi_gpu_session.tgz with every log (the device tool returns 8 files).  Exit: non-zero when a
# phase failed.  One call each, the largest kind lent (a helper's dry run, seventeenth session):
#   PHASES="ceiling torchrun allreduce" TORCH_REF=0;  PHASES=check (CHECK_NAMES split at P = 8);
#   PHASES="arn mrs" (fewer MRS_SHAPES at P = 8);  PHASES=extra last.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/multi_gpu_out}
mkdir -p "$OUT"
# the device call is killed at 600 s: every phase is bounded by one deadline, so the summary and
# the tarball are always written (BUDGET_S: seconds for the phases, from the start)
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-560} ))
# logs go to W; $OUT gets only summary.txt and the tarball (the device tool returns 8 files)
W=${WEFT_MGPU_WORK:-/tmp/weft-mgpu-session}
rm -rf "$W"; mkdir -p "$W"
export WEFT_NO_MPS=1
. "$ROOT/bench/env.sh"
# ctest's files name the tree where build/ was made (/work/main): make that path reach this copy
link_built_at "$ROOT" > /dev/null || exit 1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-mgpu-cache}
export PYTHONPATH=$ROOT/build/python PYTHONDONTWRITEBYTECODE=1
PHASES=${PHASES:-ceiling check torchrun allreduce arn mrs}
S=$OUT/summary.txt
trap 'cp "$S" "$W/" 2> /dev/null; tar czf "$OUT/multi_gpu_session.tgz" -C "$W" . 2> /dev/null' EXIT
P=$(nvidia-smi --query-gpu=index --format=csv,noheader 2> /dev/null | wc -l)
if [ "$P" -lt 2 ]; then
  echo "multi_gpu_session: $P GPU(s) here; this script needs one per rank, at least 2 (the MPS scripts cover one GPU)" | tee -a "$S"
  exit 77
fi
export WEFT_NCCL_LIB=${WEFT_NCCL_LIB:-$(nccl_lib_default)}
{
  echo "== $(date -u +%FT%TZ) bench/multi_gpu_session.sh, phases: $PHASES; $P GPU(s); commit ${WEFT_COMMIT:-$(git rev-parse --short HEAD 2> /dev/null)}"
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "NCCL: $WEFT_NCCL_LIB"
} | tee -a "$S"
bad=0
note() { echo "$*" | tee -a "$S"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
left_less() {   # left_less N: the seconds left less N (a margin for the step's own cleanup), at least 1
  local l; l=$(( $(left) - $1 ))   # (a timeout of 0 is none, a negative one an error)
  echo $(( l < 1 ? 1 : l ))
}
within() {   # within CMD...: CMD, killed at the deadline; 124 without running it when under 30 s are left
  local l; l=$(left)
  if [ "$l" -lt 30 ]; then note "  not run (${l} s of the budget left): $*"; return 124; fi
  timeout -k 10 "$l" "$@"
}
# the rank counts, as a ctest pattern: 2 and P (CHECK_COUNTS="1 2 3 4 ...": others)
counts=$(echo ${CHECK_COUNTS:-2 $P} | tr ' ' '\n' | sort -un | paste -sd '|')

for ph in $PHASES; do
  d=$W/$ph
  mkdir -p "$d"
  t0=$(date +%s)
  case $ph in
    ceiling)
      within env OUT="$d" PHASES=ceiling bash bench/multi_gpu.sh > "$d/run.log" 2>&1 || bad=1
      grep -E "copy GPU|peer access" "$d/ceiling.log" | tee -a "$S" ;;
    check)
      # the MPS tests without MPS: tests/mps/run.sh sources bench/mps.sh, which starts no daemon
      # under WEFT_NO_MPS=1, and each rank takes the GPU of its local rank
      # --stop-time: no test starts after the deadline, and a running one is stopped at it
      (cd build && within ctest -L mps -R "^mps\.(${CHECK_NAMES:-.*})\.np($counts)\$" --output-on-failure \
         --timeout 300 --stop-time "$(date -d "@$(( DEADLINE - 15 ))" +%H:%M:%S)") > "$d/ctest.log" 2>&1 || bad=1
      grep -E "\*\*\*(Failed|Timeout|Not Run)|\(Skipped\)|Unable to find" "$d/ctest.log" | head -30 | tee -a "$S"
      grep -E "tests passed|tests failed" "$d/ctest.log" | tee -a "$S" ;;
    torchrun)
      for np in $( [ "$P" -gt 2 ] && echo 2 ) "$P"; do
        within env WEFT_TEST_TIMEOUT_S="${WEFT_TEST_TIMEOUT_S:-300}" bash tests/python/dist/run.sh "$np" > "$d/test_np$np.log" 2>&1
        rc=$?
        [ $rc -ne 0 ] && bad=1
        note "torchrun test_comm np=$np: exit $rc; $(grep -h 'test_comm: P=' "$d/test_np$np.log" | tail -1); $(grep -c 'FAIL ' "$d/test_np$np.log") FAIL lines"
      done ;;
    allreduce)
      within env OUT="$d" PHASES=nccl bash bench/multi_gpu.sh > "$d/run.log" 2>&1 || bad=1
      grep -E "^(bf16|f32),|^target|symmetric kernels" "$d/compare.txt" 2> /dev/null | tee -a "$S"
      [ -s "$d/compare.txt" ] || note "allreduce: no comparison table (see $ph/run.log)" ;;
    arn)
      within env OUT="$d" WEFT_BENCH_NPS="$P" bash bench/torch_dist_session.sh arn > "$d/run.log" 2>&1 || bad=1
      grep -E "^(\||##|FAIL)|exit" "$d/summary.txt" 2> /dev/null | tee -a "$S"
      # NCCL's symmetric allreduce alone at the op's bytes (tokens x hidden x 2, bf16)
      bytes=""
      for h in ${WEFT_ARN_HIDDEN:-4096 8192}; do
        for t in ${WEFT_ARN_TOKENS:-1 16 128 1024 8192}; do bytes="$bytes${bytes:+,}$((t * h * 2))"; done
      done
      within timeout 150 $MPIRUN --bind-to none -x WEFT_NCCL_LIB -np "$P" build/nccl_bench bf16 20 symmetric "bytes=$bytes" \
        > "$d/ncclsym_bf16.log" 2>&1
      rc=$?
      if [ $rc -eq 77 ]; then   # an NCCL before 2.27: not a failure of the run
        note "NCCL symmetric allreduce: skipped ($(grep -m1 '^nccl_bench:' "$d/ncclsym_bf16.log"))"
      else
        [ $rc -ne 0 ] && bad=1
        note "NCCL symmetric allreduce alone, bf16, at the op's bytes (exit $rc):"
        grep -E "^ +[0-9]+ " "$d/ncclsym_bf16.log" | tee -a "$S"
      fi ;;
    mrs)
      within env OUT="$d" WEFT_BENCH_NPS="$P" WEFT_BENCH_TIMEOUT_S="${WEFT_BENCH_TIMEOUT_S:-$(left_less 40)}" \
        WEFT_MRS_SHAPES="${MRS_SHAPES:-16384x4096x14336 8192x8192x28672 256x4096x14336 1024x4096x14336 4096x4096x14336}" \
        bash bench/torch_dist_session.sh mrs > "$d/run.log" 2>&1 || bad=1
      grep -E "^(\||##|FAIL)|exit" "$d/summary.txt" 2> /dev/null | tee -a "$S" ;;
    extra)
      if [ "$P" -lt 4 ]; then note "extra: $P GPUs (needs 4 or 8): not run"; continue; fi
      within env OUT="$d" PHASES=check bash bench/multi_gpu.sh > "$d/allreduce_check.log" 2>&1 || bad=1
      grep -E "correctness at P|FAIL|timed out|rc=" "$d/allreduce_check.log" | tee -a "$S"
      within env OUT="$d/ag" PHASES="gpus gpuscalar" BUDGET_S="$(left_less 30)" bash bench/dev_ag_gemm_once.sh \
        > "$d/ag_gemm.log" 2>&1 || bad=1
      # its exit status is its tar's: the runs' own, from its summary (the muted-rank run must fail)
      if [ -f "$d/ag/summary.txt" ]; then
        grep -E "^== gpus.* rc=" "$d/ag/summary.txt" | grep -v "_timeout_ready rc=" | grep -qv " rc=0 " && bad=1
        grep -qE "^== gpus[0-9]+_timeout_ready rc=0 " "$d/ag/summary.txt" && bad=1
        tee -a "$S" < "$d/ag/summary.txt"
      fi ;;
    *)
      note "multi_gpu_session: unknown phase '$ph' (ceiling check torchrun allreduce arn mrs extra)"
      bad=1 ;;
  esac
  note "-- phase $ph: $(( $(date +%s) - t0 )) s ($(left) s of the budget left)"
done
exit $bad
