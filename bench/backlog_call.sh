#!/usr/bin/env bash
# bench/backlog_call.sh: what RESULTS' last "What the next GPU call runs" lists for one H100 or
# H200, in one device call of at most 10 minutes (repo root; carry build/python, build/weft and
# the ctest files, as DEVICE.md says).  Each step has its own time cap, so that one slow step
# cannot take the others' time; each writes its log under $OUT, and everything is packed into
# $OUT/backlog.tgz at the end (the device returns few files).
#   1. the deep-ring probe (bench/deep_ring_probe.sh: the rule with MAX_STAGES_NARROW = 13
#      against the rule as it is, the six shapes it moves, bf16 and f16);
#   2. the GPU tests the last sessions changed or added without a GPU: swap_ab, thin, the
#      13-stage 64 x 64 tile, the examples, torch's ops;
#   3. the fused all-gather + GEMM's MPS tests (the launch path checks its context first), and
#      weft.torch's distributed ops at 1 and 2 ranks (python.dist: the locks and the autograd
#      routing of the thirty-fourth session);
#   4. 3072^3's two modes (the set's recurring miss by the rule): two candidates and the
#      192 x 192 four-stage schedule, 8 rounds.
#   STEPS ("1 2 3 4"), CAP1..CAP4 (seconds: 190 130 150 90; 560 in all, under the call's 600)
set -u
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/env.sh"
out=${OUT:-/tmp/out}
mkdir -p "$out" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
step() {   # step N CAP LOG CMD...: CMD under timeout, its tail shown, its status said
  local n=$1 cap=$2 log=$3 t0=$SECONDS
  shift 3
  timeout --kill-after=10 "$cap" "$@" > "$out/$log" 2>&1
  local rc=$?
  echo "== step $n: rc $rc$([ $rc = 124 ] && echo " (its cap of $cap s)") in $((SECONDS - t0)) s"
  tail -6 "$out/$log"
}
for s in ${STEPS:-1 2 3 4}; do
  case $s in
    1) step 1 "${CAP1:-190}" deep.txt env OUT="$out/deep" GEMM_BUDGET=75 bash "$here/deep_ring_probe.sh" ;;
    2) step 2 "${CAP2:-130}" tests_gpu.txt env OUT="$out/tests" JOBS=8 bash "$here/device_tests.sh" \
         -R "gpu\.gemm\.(swap_ab|thin|m64_n64_col_s13)|gpu\.example|gpu\.torch" ;;
    3) built_at=$(link_built_at "$(pwd)") || exit 1
       . "$here/mps.sh"
       step 3 "${CAP3:-150}" tests_mps.txt bash -c "cd '$built_at/build' && ctest -L mps -R 'mps\.ag_fused|python\.dist\.np[12]$' -j 2 --output-on-failure --timeout 90"
       mps_stop > /dev/null 2>&1 ;;
    4) step 4 "${CAP4:-90}" square.txt env OUT="$out/square" GEMM_BUDGET=70 bash "$here/gemm_llm.sh" --models square \
         --dtype bf16 --candidates 2 --rounds 8 --heat-ms 500 \
         --extra tile.m=192,tile.n=192,consumers=3,cluster.m=2,stages=4,epilogue=tma,pdl=true ;;
    *) echo "backlog_call.sh: STEPS: no step '$s' (1 2 3 4)" >&2; exit 2 ;;
  esac
done
(cd "$out" && mapfile -t items < <(ls -A | grep -vx backlog.tgz) &&
 tar czf backlog.tgz.part --exclude='cache*' --exclude='*.db' -- "${items[@]}" && mv backlog.tgz.part backlog.tgz &&
 rm -rf -- "${items[@]}")
