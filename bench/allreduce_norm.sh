#!/usr/bin/env bash
# bench/allreduce_norm.sh: issue 21's GPU session in one device call (repo root, build/ carried).
#   PHASES  "tests time" (default):
#     tests  the GPU tests of the rmsnorm family (its device code is shared) and every MPS test of
#            allreduce_norm (correctness at 1, 2, 3, 4, 8 ranks, timeouts with a muted rank);
#     time   the fused kernel beside the unfused sequence (weft allreduce, then weft rmsnorm with the
#            residual, the same layout) and each alone, at P = RANKS (default "1 2 4 8") under MPS, for
#            every algorithm, tokens {1, 16, 128, 1024, 8192} x hidden {4096, 8192}, bf16.
#            SPECIALIZE=1: each kernel generated for its world size (--set ranks=P); SETS: more
#            --set key=value words for the fused kernel (e.g. "min_blocks=2 quant=fp8_e4m3"); AUTO=1:
#            tests/configs/allreduce_norm_auto.lua with --auto instead (the rule's kernel per shape; ALGOS=auto).
#   Logs under $OUT; a summary on stdout.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
out=${OUT:-/tmp/out}
mkdir -p "$out"
phases=${PHASES:-tests time}
. "$here/env.sh"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for ph in $phases; do
  case $ph in
    tests)
      (cd build && ctest -R "${TESTS:-gpu\.rmsnorm|mps\..*arn}" -j "${JOBS:-2}" --output-on-failure --timeout 300) \
        > "$out/tests.txt" 2>&1
      grep -E "tests passed|tests failed|\*\*\*Failed|Timeout|Not Run" "$out/tests.txt" | head -40 ;;
    time)
      for np in ${RANKS:-1 2 4 8}; do
        for algo in ${ALGOS:-one_shot_ll one_shot two_shot}; do
          for hidden in ${HIDDEN:-4096 8192}; do
            shapes=""
            for t in ${TOKENS:-1 16 128 1024 8192}; do shapes="$shapes --time-shape ${t}x$hidden"; done
            sets=""
            [ "${SPECIALIZE:-0}" = 1 ] && sets="--set ranks=$np"
            for kv in ${SETS:-}; do sets="$sets --set $kv"; done
            f="$out/time_np${np}_${algo}_${hidden}.txt"
            if [ "${AUTO:-0}" = 1 ]; then   # the rule's kernel per shape (algo, layout, ranks): ALGOS is ignored
              timeout 300 $MPIRUN -x WEFT_CACHE_DIR -x CUDA_MPS_PIPE_DIRECTORY -np "$np" build/weft run \
                "$here/../tests/configs/allreduce_norm_auto.lua" --auto $sets --no-check --shapes-only $shapes > "$f" 2>&1
            else
              timeout 300 $MPIRUN -x WEFT_CACHE_DIR -x CUDA_MPS_PIPE_DIRECTORY -np "$np" build/weft run "$here/../examples/allreduce_norm.lua" \
                --set algo="$algo" --set max_cols="$hidden" $sets --no-check --shapes-only $shapes > "$f" 2>&1
            fi
            echo "== P=$np $algo hidden=$hidden $sets rc=$?"
            grep -E "^ +[0-9]+ +[0-9]+ " "$f" || tail -3 "$f"
          done
        done
      done ;;
  esac
done
echo quit | nvidia-cuda-mps-control
