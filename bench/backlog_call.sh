#!/usr/bin/env bash
# bench/backlog_call.sh: what RESULTS' last "What the next GPU call runs" lists for one H100 or
# H200, in one device call of at most 10 minutes (repo root; carry build/python, build/weft and
# the ctest files, as DEVICE.md says).  Each step has its own time cap, so that one slow step
# cannot take the others' time; each writes its log under $OUT, and everything is packed into
# $OUT/backlog.tgz at the end (the device returns few files).
#   1. weft.torch's distributed ops at 1 and 2 ranks under MPS (python.dist.np1/np2: the locks and
#      the autograd routing of the thirty-fourth session; the thirty-fifth's first call reached
#      np1 at its step's cap; np1 and np2 took 102 and 91 s in the tenth session), with
#      ctest's whole output;
#   2. narrow tiles at M = 64 and 128 (Llama-3-8B's and -70B's layers, bf16): the rule's two
#      candidates beside six schedules cuBLASLt's kernels there suggest (64 x 64 with 13 stages,
#      a 2-CTA multicast cluster along N, swapped 64 x 64 in a cluster of 4 along N as cuBLASLt's
#      64x64_64x13_4x1, the direct epilogue with split 2), 8 rounds;
#   3. shapes off the set that the rule misses most (224 x 1536 x 8960, 200 x 2048 x 7168,
#      200 x 3072 x 12288, 640 x 2048 x 7168): 128-row two-consumer tiles split 4 ways along K
#      beside the rule's four candidates, 8 rounds.
#   4. bench/dual_acc_probe.sh: one consumer with two accumulator sets against one (six configs,
#      checked and timed beside cuBLASLt; the thirty-sixth session's first call);
#   5. weft.torch's distributed ops at 4 and 8 ranks under MPS (python.dist.np4/np8: the settings
#      case at P > 2; np4 took 128 s in the tenth session).
#   6. the narrow 64-row tiles where an H200's rule moved its pick (the thirty-sixth session timed
#      them on H100s only): 64 x 6144 x 4096 (0.94 of cuBLASLt by the old pick on an H200), 64 x
#      4096 x 4096, 64 x 2560 x 2560, 64 x 3072 x 3072 and 60 x 2560 x 2560, both dtypes, the rule's
#      pick and next five candidates, 6 rounds;
#   7. bench/mma_probe.sh steps 1 and 3: the kturns checks, then racecheck and synccheck.
#   8. bench/mma_probe.sh with MMA=pingpong, steps 1 and 2: pingpong tiles wider than 128 x 128
#      (up to 192 accumulators per thread; one C buffer per warpgroup where two do not fit) checked,
#      then timed at large shapes, where cuBLASLt's kernel at 1024 x 14336 x 4096 is a 128 x 176
#      pingpong, both dtypes, the rule's four candidates, 6 rounds.
#   9. kturns' hand-over with both warpgroups waiting at one bar.sync (this tree) against a copy
#      whose writer arrives (bar.arrive, the thirty-sixth session's), made here from this tree's gen/ and
#      templates/: bench/mma_probe.sh step 4, `weft run` timing each (graph replay, beside cuBLASLt)
#      in turn, three rounds, swapped 56 x 64 and 64 x 48 at 224 x 1536 x 8960, 64 x 4096 x 14336
#      and 2048 x 1536 x 576.
#  10. mma = "cooperative_n" (the consumers split each tile by columns, cuBLASLt's coopB): seven
#      configs checked by bench/mma_probe.sh step 1, then five timed beside the rule's four
#      candidates and cuBLASLt at seven large shapes (B column-major), bf16, 6 rounds;
#  11. the same on the set's squares (B row-major: each consumer its own boxes of B), four
#      configs, bf16, 6 rounds;
#  12. compute-sanitizer's racecheck and synccheck over two cooperative_n configs (mma_probe.sh
#      step 3: the first and third CHECK configs).
#  13. where the loads' time goes at 3072^3 and 16384 x 6144 x 4096 (B column-major): bench/src_ab.sh
#      over this tree and diag_gemm_bounds.sh's noepi, noload and nomma copies (cooperative_n 192 x
#      192 and the rule's cooperative 128 x 192, both 2 x 1); then cooperative_n 192 x 192 and
#      cooperative 128 x 176 (weft's best there) in a 2 x 1 cluster against 1 x 2 (A multicast along N, as cuBLASLt's kernels at 1024 x 14336 x 4096 and
#      other shapes), and pingpong 128 x 176 s5 1 x 2 (cuBLASLt's 176x128_64x5_1x2 there), in turn,
#      at those two shapes and 1024 x 14336 x 4096; then the
#      SM clock and power of the real kernel and its noload copy at 3072^3 (bench/gemm_clock.py):
#      whether noload's lead is time not spent waiting for loads, or a clock the power cap allows.
#  14. compute-sanitizer's racecheck over kturns 64 x 48 with the direct epilogue (pdl) and the TMA
#      one (mma_probe.sh step 3), whose hand-over the thirty-seventh session's racecheck still
#      reported with the TMA epilogue.
#  15. the communicator runners after their shared code moved to runtime/cli/runners/comm_run.c
#      (the fortieth session; checked on the host only): an MPS test of each (allreduce with sum,
#      prod and a custom operator, the pdl chain and its must-fail copy, a timeout; reduce_scatter
#      and all_gather; allreduce_norm; gemm_rs, gemm_ar, ag_gemm), then each collective timed at 2
#      ranks (the tests run --no-time; the timing path is comm_run_time).
#  16. cooperative_n 192 x 192 at three stages, C through a buffer per chunk (each 64-row group's
#      narrow chunk dense since the forty-first session, so the whole tile fits beside three
#      stages) against four stages through two buffers in turn (a wait for each chunk's read):
#      the gpu.gemm.coop_n_* tests, then bench/src_ab.sh beside cooperative 128 x 192 and 128 x 176
#      (weft's best at 3072^3 and 16384 x 6144 x 4096) at those shapes and two off the set, B
#      column-major; then B row-major at 3072^3, 4096^3 and one off the set; 3 rounds.
#  17. compute-sanitizer's racecheck and synccheck over that three-stage config (mma_probe.sh step 3).
#  18. K off the 128-byte lines (2000 x 7000 x 3000, 384 x 5000 x 5000, 5000 x 3000 x 6000, 5000^3;
#      2000 x 7000 x 3072 aligned beside them), where the forty-first session found weft at 0.71-0.90
#      of cuBLASLt: A's and B's tensor maps with each L2 promotion (0, 64, 128, 256) on the best
#      schedules there, beside the rule's two candidates, bf16 and f16, 4 rounds (gemm_llm.sh).
#  19. ncu (the full set, one launch each) of cuBLASLt and weft's best at 2000 x 7000 x 3000 and at
#      2000 x 7000 x 3072 (aligned): what cuBLASLt does with rows off the lines (L2 sectors per
#      request, L2 throughput, the tensor pipe) -- bench/gemm_prof.sh's prof phase.
#   STEPS ("1 2 3"), CAP1..CAP19 (seconds: 300 160 100 150 420 120 200 300 150 330 200 240 480 200 300 420 300 240 240)
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
dist_step() {   # dist_step N CAP LOG RANKS TIMEOUT: python.dist.np<RANKS> under MPS, ctest's whole output
  local built_at
  built_at=$(link_built_at "$(pwd)") || exit 1
  . "$here/mps.sh"
  step "$1" "$2" "$3" bash -c 'cd "$1/build" && exec ctest -R "python\.dist\.np[$2]\$" -V --timeout "$3"' _ "$built_at" "$4" "$5"
  mps_stop > /dev/null 2>&1
}
narrow="consumers=1,pdl=true"
split="consumers=2,split_k=4,pdl=true"
for s in ${STEPS:-1 2 3}; do
  case $s in
    1) dist_step 1 "${CAP1:-300}" dist.txt 12 220 ;;
    2) step 2 "${CAP2:-160}" narrow.txt env OUT="$out/narrow" GEMM_BUDGET=140 bash "$here/gemm_llm.sh" \
         --models llama3-8b,llama3-70b --m 64,128 --dtype bf16 --candidates 2 --rounds 8 \
         --extra "tile.m=64,tile.n=64,stages=13,split_k=1,epilogue=tma,$narrow" \
         --extra "tile.m=64,tile.n=64,stages=13,cluster.n=2,split_k=1,epilogue=tma,$narrow" \
         --extra "tile.m=64,tile.n=96,stages=10,cluster.n=2,split_k=1,epilogue=tma,$narrow" \
         --extra "tile.m=64,tile.n=64,stages=13,split_k=2,epilogue=direct,$narrow" \
         --extra "swap_ab=true,tile.m=64,tile.n=64,stages=13,cluster.n=4,epilogue=direct,$narrow" \
         --extra "swap_ab=true,tile.m=64,tile.n=64,stages=14,epilogue=direct,$narrow" ;;
    3) step 3 "${CAP3:-100}" offset.txt env OUT="$out/offset" GEMM_BUDGET=85 bash "$here/gemm_llm.sh" \
         --shapes 224x1536x8960,200x2048x7168,200x3072x12288,640x2048x7168 --dtype bf16 --candidates 4 --rounds 8 \
         --extra "tile.m=128,tile.n=96,stages=5,epilogue=tma,$split" \
         --extra "tile.m=128,tile.n=128,stages=4,epilogue=tma,$split" \
         --extra "tile.m=128,tile.n=64,stages=7,epilogue=direct,$split" ;;
    4) step 4 "${CAP4:-150}" probe.txt env OUT="$out/probe" bash "$here/dual_acc_probe.sh" ;;
    5) dist_step 5 "${CAP5:-420}" dist48.txt 48 300 ;;
    6) step 6 "${CAP6:-120}" narrow64.txt env OUT="$out/narrow64" GEMM_BUDGET=100 bash "$here/gemm_llm.sh" \
         --shapes 64x6144x4096,64x4096x4096,64x2560x2560,64x3072x3072,60x2560x2560 --dtype bf16,f16 \
         --candidates 5 --rounds 6 ;;
    7) step 7 "${CAP7:-200}" kturns.txt env OUT="$out/kturns" STEPS="1 3" bash "$here/mma_probe.sh" ;;
    8) pp="tile.m=128 epilogue=tma"
       step 8 "${CAP8:-300}" pingpong.txt env OUT="$out/pingpong" MMA=pingpong STEPS="1 2" CANDIDATES=4 \
         DTYPE=bf16,f16 GEMM_BUDGET=240 \
         CHECK="$pp tile.n=176 stages=5 cluster.m=2;$pp tile.n=176 stages=5;$pp tile.n=160 stages=5 dtype=f16;\
$pp tile.n=192 stages=4 b_layout=row cluster.m=2;$pp tile.n=144 stages=5 cluster.n=2;tile.m=256 tile.n=80 stages=3 epilogue=direct" \
         EXTRAS="tile.m=128,epilogue=tma,tile.n=176,stages=5,cluster.m=2;tile.m=128,epilogue=tma,tile.n=176,stages=5;\
tile.m=128,epilogue=tma,tile.n=192,stages=4,cluster.m=2;tile.m=128,epilogue=tma,tile.n=160,stages=5,cluster.m=2" \
         SHAPES=1024x14336x4096,1024x4096x14336,1024x6144x4096,1024x10240x8192,4096x14336x4096,16384x6144x4096,3072x3072x3072,2048x8192x8192 \
         bash "$here/mma_probe.sh" ;;
    9) arrive="$out/kturns_arrive_src"
       rm -rf "$arrive" && mkdir -p "$arrive" && cp -r gen templates "$arrive/" &&
         perl -0pi -e 's/  bar_sync\(BAR_KTURNS_WG0 \+ storer, 256\);\n  if \(!stores\) return false;/  if (!stores) { bar_arrive(BAR_KTURNS_WG0 + storer, 256); return false; }\n  bar_sync(BAR_KTURNS_WG0 + storer, 256);/' \
           "$arrive/templates/weft/gemm_mainloop.cuh" &&
         grep -q "bar_arrive(BAR_KTURNS_WG0" "$arrive/templates/weft/gemm_mainloop.cuh" ||
         { echo "== step 9: skipped: the copy whose writer arrives could not be made" >&2; rm -rf "$arrive"; continue; }
       step 9 "${CAP9:-150}" kturns_writer.txt env OUT="$out/kturns_writer" OTHER_SRC="$arrive" STEPS=4 ROUNDS=3 \
         CHECK="swap_ab=true tile.m=56 tile.n=64 stages=14 epilogue=direct pdl=true;tile.m=64 tile.n=48 stages=10 epilogue=tma pdl=true" \
         TIME_SHAPES="224x1536x8960 64x4096x14336 2048x1536x576" bash "$here/mma_probe.sh"
       rm -rf "$arrive" ;;
    10) cn="tile.m=192 tile.n=192 stages=4"
        step 10 "${CAP10:-330}" coop_n.txt env OUT="$out/coop_n" MMA=cooperative_n STEPS="1 2" CANDIDATES=4 \
          DTYPE=bf16 GEMM_BUDGET=220 \
          CHECK="$cn cluster.m=2 epilogue=tma;$cn dtype=f16 epilogue=tma;tile.m=256 tile.n=192 stages=3 cluster.m=2 epilogue=tma;\
b_layout=row tile.m=128 tile.n=256 stages=4 cluster.m=2 epilogue=tma;tile.m=128 tile.n=176 stages=4 cluster.n=2 epilogue=tma;\
tile.m=64 tile.n=256 stages=4 epilogue=direct;b_layout=row $cn cluster.m=2 epilogue=tma" \
          EXTRAS="tile.m=192,tile.n=192,stages=4,cluster.m=2,epilogue=tma;tile.m=192,tile.n=192,stages=4,epilogue=tma;\
tile.m=256,tile.n=192,stages=3,cluster.m=2,epilogue=tma;tile.m=128,tile.n=256,stages=4,cluster.m=2,epilogue=tma;\
tile.m=192,tile.n=160,stages=4,cluster.m=2,epilogue=tma" \
          SHAPES=3072x3072x3072,16384x6144x4096,2304x2304x2304,4096x14336x4096,1024x14336x4096,4096x4096x4096,8192x8192x8192 \
          bash "$here/mma_probe.sh" ;;
    11) cr="mma=cooperative_n,consumers=2,stages=4,cluster.m=2,epilogue=tma"
        step 11 "${CAP11:-200}" coop_n_squares.txt env OUT="$out/coop_n_squares" GEMM_BUDGET=180 bash "$here/gemm_llm.sh" \
          --models square --dtype bf16 --candidates 4 --rounds 6 --extra "$cr,tile.m=128,tile.n=256" \
          --extra "$cr,tile.m=256,tile.n=128" --extra "$cr,tile.m=192,tile.n=128" --extra "$cr,tile.m=192,tile.n=192" ;;
    12) step 12 "${CAP12:-240}" coop_n_sanitize.txt env OUT="$out/coop_n_sanitize" MMA=cooperative_n STEPS=3 \
          CHECK="tile.m=192 tile.n=192 stages=4 cluster.m=2 epilogue=tma;x;tile.m=128 tile.n=176 stages=4 cluster.n=2 epilogue=tma" \
          bash "$here/mma_probe.sh" ;;
    13) cb="b_layout=col stages=4 epilogue=tma" cn="tile.m=192 tile.n=192 mma=cooperative_n"
        step 13 "${CAP13:-480}" loads.txt bash -c '
          env SRCS=. DIAG="noepi noload nomma" CFGS="$1 $2 cluster.m=2;$1 tile.m=128 tile.n=192 cluster.m=2" \
            SHAPES="3072x3072x3072 16384x6144x4096" OUT="$3/ab" bash "$4/src_ab.sh" || exit
          t="$1 tile.m=128 tile.n=176"
          env SRCS=. CFGS="$1 $2 cluster.m=2;$1 $2 cluster.n=2;$t cluster.m=2;$t cluster.n=2;$t mma=pingpong stages=5 cluster.n=2" \
            SHAPES="3072x3072x3072 16384x6144x4096 1024x14336x4096" OUT="$3/cluster" bash "$4/src_ab.sh" || exit
          c=$(echo "$1 $2 cluster.m=2" | tr " " ,)
          PYTHONPATH=build/python python3 "$4/gemm_clock.py" --out "$3/clock" --secs 2 \
            --shape "3072x3072x3072:$c;@$3/ab/diag/weft_diag_noload,$c"' _ "$cb" "$cn" "$out/loads" "$here" ;;
    14) step 14 "${CAP14:-200}" kturns_sanitize.txt env OUT="$out/kturns_sanitize" STEPS=3 \
          CHECK="tile.m=64 tile.n=48 stages=10 epilogue=direct pdl=true;x;tile.m=64 tile.n=48 stages=10 epilogue=tma" \
          bash "$here/mma_probe.sh" ;;
    15) t='f32_sum_one_shot|custom_two_shot|f32_sum_one_shot_pdl|allreduce_pdl_nowait_caught|timeout\.ready'
        t="$t|reduce_scatter_f32_sum|reduce_scatter_custom|all_gather_f32|reduce_scatter_f32_sum_pdl|arn_bf16_one_shot"
        t="$t|arn_pdl_one_shot|gemm_rs_bf16|gemm_ar_bf16|ag_fused_tma"
        step 15 "${CAP15:-300}" comm_runners.txt bash -c '
          OUT="$1/comm_runners" bash "$2/device_tests.sh" -R "^mps\.(($3)\.np[23]|f32_prod_one_shot\.np4)\$" || exit
          . "$2/mps.sh"
          trap "mps_stop > /dev/null 2>&1" EXIT   # (a failed run or the cap: no daemon left for later steps)
          for c in "allreduce.lua --elems 65536" "allreduce.lua --elems 65536 --set pdl=true" \
                   "reduce_scatter.lua --n 65536" "all_gather.lua --n 65536" "allreduce_norm.lua --rows 64 --cols 4096"; do
            # shellcheck disable=SC2086
            timeout 120 $MPIRUN -np 2 build/weft run examples/$c --no-check --iters 20 2>&1 || exit
          done' _ "$out" "$here" "$t" ;;
    16) c3="tile.m=192 tile.n=192 mma=cooperative_n stages=3 cluster.m=2 epilogue=tma"
        step 16 "${CAP16:-420}" whole_epi.txt bash -c '
          OUT="$1/whole_epi/tests" bash "$2/device_tests.sh" -R "^gpu\.gemm\.coop_n_" || exit
          c4=${3/stages=3/stages=4} t="stages=4 cluster.m=2 epilogue=tma tile.m=128"
          env SRCS=. CFGS="b_layout=col $3;b_layout=col $c4;b_layout=col $t tile.n=192;b_layout=col $t tile.n=176" \
            SHAPES="3072x3072x3072 16384x6144x4096 3000x5000x4000 8192x3584x2048" OUT="$1/whole_epi/col" bash "$2/src_ab.sh" || exit
          env SRCS=. CFGS="$3;$c4;$t tile.n=192;tile.m=128 tile.n=256 stages=3 cluster.m=2 epilogue=tma" \
            SHAPES="3072x3072x3072 4096x4096x4096 6144x2816x3584" OUT="$1/whole_epi/row" bash "$2/src_ab.sh"' _ "$out" "$here" "$c3" ;;
    17) step 17 "${CAP17:-300}" whole_epi_sanitize.txt env OUT="$out/whole_epi_sanitize" MMA=cooperative_n STEPS=3 \
          CHECK="tile.m=192 tile.n=192 mma=cooperative_n stages=3 cluster.m=2 epilogue=tma" bash "$here/mma_probe.sh" ;;
    18) x=()
        for p in 0 64 128 256; do x+=(--extra "tile.m=256,tile.n=160,stages=3,cluster.n=2,epilogue=tma,l2_promotion=$p"); done
        for p in 0 128; do
          x+=(--extra "tile.m=128,tile.n=256,stages=4,cluster.m=2,epilogue=tma,l2_promotion=$p")
          x+=(--extra "tile.m=64,tile.n=240,consumers=1,stages=5,cluster.m=2,epilogue=tma,pdl=true,l2_promotion=$p")
        done
        step 18 "${CAP18:-240}" l2p.txt env OUT="$out/l2p" GEMM_BUDGET=$((${CAP18:-240} - 60)) bash "$here/gemm_llm.sh" \
          --shapes 2000x7000x3000,384x5000x5000,5000x3000x6000,5000x5000x5000,2000x7000x3072 --dtype bf16,f16 \
          --candidates 2 --rounds 4 "${x[@]}" ;;
    19) w="tile.m=256 tile.n=160 stages=3 cluster.n=2 epilogue=tma"
        step 19 "${CAP19:-240}" unaligned_prof.txt env OUT="$out/unaligned_prof" PHASES=prof \
          PROF="2000x7000x3000 torch;2000x7000x3000 $w;2000x7000x3072 torch;2000x7000x3072 $w" bash "$here/gemm_prof.sh" ;;
    *) echo "backlog_call.sh: STEPS: no step '$s' (1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19)" >&2; exit 2 ;;
  esac
done
(cd "$out" && mapfile -t items < <(ls -A | grep -vx backlog.tgz) &&
 tar czf backlog.tgz.part --exclude='cache*' --exclude='*.db' -- "${items[@]}" && mv backlog.tgz.part backlog.tgz &&
 rm -rf -- "${items[@]}")
