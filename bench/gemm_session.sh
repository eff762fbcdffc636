#!/usr/bin/env bash
# bench/gemm_session.sh: issue 19's GPU session in one device call (repo root, build/ carried:
# the CLI, its ctest files, and build/python).  1. the GEMM's GPU tests and the fused kernel's
# MPS tests; 2. bench/gemm_llm.sh on the published set, bf16 then f16, every checked candidate
# stored in one tuning database ($OUT/llm.db: `weft export-table --db` makes the table rows).
#   PHASES  "tests bf16 f16" (default), and: offset (shapes off the set, auto with the shipped
#           table; its candidates recorded in the same database), ag (ag_gemm at P = 1 beside the
#           GEMM, same schedule); GEMM_BUDGET per run (200 s); ROUNDS, the timed rounds per op
#           (gemm_llm.py's --rounds, 4; an even count).
# The device returns at most 8 files from $OUT: at the end everything there but the database
# goes into $OUT/logs.tgz (each phase's logs and TSVs in its folder; compile caches left out).
# PACK=0 leaves the files as they are.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
out=${OUT:-/tmp/out}
mkdir -p "$out"
pack() {
  (cd "$out" || exit 1
   mapfile -t items < <(ls -A | grep -vx -e llm.db -e logs.tgz)
   [ ${#items[@]} = 0 ] && exit 0
   tar czf logs.tgz.part --exclude='cache*' -- "${items[@]}" && mv logs.tgz.part logs.tgz && rm -rf -- "${items[@]}")
}
phases=${PHASES:-tests bf16 f16}
for ph in $phases; do
  case $ph in
    tests)
      JOBS=8 bash "$here/device_tests.sh" -R "gpu\.gemm|gpu\.example" > "$out/tests_gpu.txt" 2>&1
      tail -4 "$out/tests_gpu.txt"
      . "$here/env.sh"
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
      mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
      nvidia-cuda-mps-control -d
      (cd build && ctest -R "mps\.ag_fused" -j 2 --output-on-failure --timeout 300) > "$out/tests_mps.txt" 2>&1
      echo quit | nvidia-cuda-mps-control
      tail -4 "$out/tests_mps.txt"
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
    bf16|f16)
      OUT=$out/$ph GEMM_BUDGET=${GEMM_BUDGET:-200} bash "$here/gemm_llm.sh" --dtype "$ph" --candidates "${CANDIDATES:-10}" \
        --rounds "${ROUNDS:-4}" --record-db "$out/llm.db" > "$out/$ph.txt" 2>&1
      echo "== $ph: rc $?"; grep -E "^best/cuBLASLt|^auto/cuBLASLt|FAILED|shapes run" "$out/$ph.txt" | cut -c1-200 ;;
    offset)   # shapes off the published set, auto reading the shipped table (as a user gets it)
      . "$here/env.sh"
      OUT=$out/offset GEMM_BUDGET=${GEMM_BUDGET:-200} bash "$here/gemm_llm.sh" --auto-table shipped --candidates \
        "${CANDIDATES:-10}" --record-db "$out/llm.db" --shapes "${OFFSET_SHAPES:-$GEMM_OFFSET_SHAPES}" \
        > "$out/offset.txt" 2>&1
      echo "== offset: rc $?"; grep -E "^best/cuBLASLt|^auto/cuBLASLt|FAILED|shapes run" "$out/offset.txt" | cut -c1-300 ;;
    ag)   # the fused all-gather + GEMM at P = 1 against the GEMM, same schedule, same process each
      . "$here/env.sh"
      : > "$out/ag.txt"
      # (every field of the schedule set: the two examples differ in their epilogue)
      for sc in "16x4096x14336 tile.m=64 tile.n=128 consumers=1 stages=6 split_k=2" \
                "1024x14336x4096 tile.m=128 tile.n=192 consumers=2 stages=4" \
                "4096x4096x4096 tile.m=128 tile.n=256 consumers=2 stages=3"; do
        set -- $sc; shp=$1; shift
        for ex in gemm ag_gemm; do
          row=$(build/weft run examples/$ex.lua $(set_args "b_layout=col epilogue=tma group=16 $*") --no-check --shapes-only --time-shape "$shp" \
                --iters 50 2>&1 | grep "^ag_gemm " | tail -1)
          echo "$ex $shp $* | $row" | tee -a "$out/ag.txt"
        done
      done ;;
  esac
done
if [ "${PACK:-1}" = 1 ]; then pack; fi
