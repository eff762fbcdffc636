#!/usr/bin/env bash
# bench/dev_ag_gemm_once.sh: one device call for the ag_gemm family (run from the repo root on
# the GPU machine with build/ built; logs under $OUT, a summary in $OUT/summary.txt):
#   1. P = 1: weft's GEMM beside cuBLASLt, bf16/f16 x B row/col, 4096^3 and 8192^3, and the
#      small shapes (1024^3, 8192x1024x1024) over a few tiles;
#   2. P = 1: every variant at 1024^3, the fused kernel against the plain GEMM at 4096^3/8192^3;
#   3. P = #GPUs (one rank per GPU, if more than one): every variant, NCCL all-gather + cuBLASLt
#      beside them, the seed's 1024^3 (its table printed with weft's numbers: bench/seed_table.py;
#      AG_DTYPE=f16 for the seed's dtype) and the large shapes;
#   4. MPS on GPU 0: every variant at P = 2, 4, 8 (checks, then 1024^3 timed: protocol cost).
# Other phases: prof (ncu over PROF_CONFIGS and torch.matmul at PROF_SHAPE), gpuscalar (the scalar variants one rank per GPU only), tests (ctest's gpu.gemm.* and gpu.ag_gemm.* entries), pp (pingpong against cooperative tiles),
# table / mpstable (issue 4's table: the five variants and cuBLASLt at 1024^3 and 8192^3, at
# P = 1 and under MPS at P = 2, 4, 8; bench/variant_table.py prints it).
set -u
. bench/env.sh
export WEFT_NCCL_LIB=${WEFT_NCCL_LIB:-$(nccl_lib_default)}
O=${OUT:-./out}
mkdir -p "$O/logs"
export WEFT_CACHE_DIR=/tmp/weft-ag-cache WEFT_SIGNAL_TIMEOUT_MS=30000
W=build/weft
S=$O/summary.txt
AG_DTYPE=${AG_DTYPE:-bf16}   # the seed's table is fp16: AG_DTYPE=f16
nvidia-smi -L >"$S"
NG=$(nvidia-smi -L | wc -l)
P=$NG
PHASES=${PHASES:-gemm scalar p1 gpus mps}   # which parts to run
T_END=$(( $(date +%s) + ${BUDGET_S:-540} ))   # runs that would start after this are skipped
want() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
r() {   # r NAME LIMIT CMD...: one run, its rows and verdicts into the summary
  local name=$1 lim=$2; shift 2
  local left=$(( T_END - $(date +%s) ))
  if [ $left -le 5 ]; then echo "== $name skipped (out of time)" >>"$S"; return; fi
  [ $lim -gt $left ] && lim=$left
  local t0=$(date +%s)
  timeout "$lim" "$@" >"$O/logs/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $(( $(date +%s) - t0 ))s" >>"$S"
  grep -E "^(ag_gemm |check: )|FAIL|rror" "$O/logs/$name.log" | grep -v "^#" | head -40 >>"$S"
}
big="--shapes-only --shape 1000x1000x1000 --shape 128x256x64 --shape 2048x1536x512 --time-shape 4096x4096x4096 --time-shape 8192x8192x8192 --iters 20"
small="--shapes-only --shape 1000x1000x1000 --time-shape 1024x1024x1024 --time-shape 8192x1024x1024 --iters 50"
# ---- 1. the GEMM at P = 1
want gemm && for dt in bf16 f16; do for bl in row col; do
  r gemm_${dt}_${bl} 120 $W run examples/gemm.lua --set dtype=$dt --set b_layout=$bl $big
done; done
# ---- ctest's GPU entries for the GEMM (device_tests.sh makes the tree visible where it was built)
want tests && OUT=$O/logs bash bench/device_tests.sh -R "${TESTS_RE:-^gpu\.(ag_)?gemm}" >/dev/null 2>&1;
want tests && { echo "== ctest -R ${TESTS_RE:-^gpu\.(ag_)?gemm}"; grep -E "tests passed|Failed|Not Run|\*\*\*" "$O/logs/ctest_gpu.log"; } >>"$S"
# ---- GEMM configurations against each other and cuBLASLt (bf16, B row-major; PP_CONFIGS: a
# comma-separated list of space-separated --set lists; PP_SHAPES: the timed shapes)
pp_shapes="--shapes-only --shape 1000x1000x1000 ${PP_SHAPES:---time-shape 1024x1024x1024 --time-shape 8192x1024x1024 --time-shape 4096x4096x4096} --iters 30"
IFS=, read -r -a pp_configs <<<"${PP_CONFIGS:-tile.n=256,tile.n=128 mma=pingpong,tile.n=128 mma=pingpong stages=6,tile.m=64 tile.n=256 consumers=1 stages=5,tile.m=256 tile.n=64 mma=pingpong}"
want pp && for t in "${pp_configs[@]}"; do
  sets=$(set_args "$t")
  r "pp_$(echo $t | tr ' =' '_-')" 90 $W run examples/gemm.lua $sets $pp_shapes
done
want gemm && for t in "tile.m=128 tile.n=256" "tile.m=128 tile.n=128" "tile.m=128 tile.n=128 stages=6" "tile.m=64 tile.n=128 consumers=1 stages=6"; do
  sets=$(set_args "$t")
  r "gemm_small_$(echo $t | tr ' =' '_-')" 60 $W run examples/gemm.lua $sets $small
done
# ---- the scalar variants (the seed's fused kernels): small shapes only, they are slow by design
SCALAR="naive_remote,threadload_gather,multimem_gather --set fallback=emulate"
scalar_runs() {   # scalar_runs PREFIX LAUNCHER...
  local pre=$1; shift
  IFS=, read -r -a vs <<<"$SCALAR"
  for v in "${vs[@]}"; do
    r "${pre}_$(echo $v | cut -d' ' -f1)" 45 "$@" $W run examples/ag_gemm.lua --set variant=$v --set tile=auto --set dtype=$AG_DTYPE \
      --shapes-only --shape 1000x1000x1000 --shape 2048x256x256 --time-shape 1024x1024x1024 --iters 5
  done
}
want scalar && scalar_runs p1
# ---- issue 4's table: the five variants (each beside cuBLASLt in its own run)
TABLE_SHAPES="--time-shape 1024x1024x1024 --time-shape 8192x8192x8192"
table_runs() {   # table_runs PREFIX LAUNCHER...
  local pre=$1; shift
  for v in "naive_remote --set tile=auto" "threadload_gather --set tile=auto" \
           "multimem_gather --set tile=auto --set fallback=emulate" gather_then_gemm fused; do
    r "${pre}_$(echo $v | cut -d' ' -f1)" 240 "$@" $W run examples/ag_gemm.lua --set variant=$v --set dtype=$AG_DTYPE \
      --shapes-only --shape 1000x1000x1000 $TABLE_SHAPES --iters 20
  done
  for sh in 1024x1024x1024 8192x8192x8192; do
    python3 bench/variant_table.py --shape $sh naive_remote=$O/logs/${pre}_naive_remote.log \
      threadload_gather=$O/logs/${pre}_threadload_gather.log multimem_gather=$O/logs/${pre}_multimem_gather.log \
      gather_then_gemm=$O/logs/${pre}_gather_then_gemm.log fused=$O/logs/${pre}_fused.log >>"$S" 2>&1
  done
}
want table && table_runs table1
# ---- 2. every variant at P = 1; fused against the plain GEMM
want p1 && for v in fused gather_then_gemm; do
  r "p1_$(echo $v | cut -d' ' -f1)" 90 $W run examples/ag_gemm.lua --set variant=$v --shapes-only --shape 1000x1000x1000 --time-shape 1024x1024x1024 --iters 20
done
want p1 && r p1_fused_big 120 $W run examples/ag_gemm.lua $big
# ---- 3. one rank per GPU
if [ "$NG" -gt 1 ] && want gpus; then
  P=$NG
  for v in fused "fused --set comm=tma" "fused --set comm=multimem --set fallback=emulate" gather_then_gemm \
           "gather_then_gemm --set comm=multimem --set fallback=emulate"; do
    r "gpus${P}_$(echo $v | tr ' =' '_-' | sed 's/--set_//g')" 150 $MPIRUN -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -x WEFT_NCCL_LIB -np $P \
      $W run examples/ag_gemm.lua --set variant=$v --set dtype=$AG_DTYPE --shapes-only --shape 1000x1000x1000 \
      --shape $((1024*P))x1536x512 --time-shape 1024x1024x1024 --time-shape 16384x1792x4096 --time-shape 8192x3584x8192 --iters 20
  done
fi
if [ "$NG" -gt 1 ] && { want scalar || want gpuscalar; }; then
  scalar_runs gpus$P $MPIRUN -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -x WEFT_NCCL_LIB -np $P
fi
if [ "$NG" -gt 1 ] && want gpus; then
  r gpus${P}_timeout_ready 60 $MPIRUN -x WEFT_CACHE_DIR -x WEFT_FAULT=mute:1:ready -x WEFT_SIGNAL_TIMEOUT_MS=300 -np $P \
    $W run examples/ag_gemm.lua --shapes-only --shape 1000x1000x1000 --no-time
fi
# ---- 4. MPS on GPU 0
if want mps || want scalar || want mpstable; then
export CUDA_VISIBLE_DEVICES=0
. bench/mps.sh
want mps && for np in 2 4 8; do
  IFS=, read -r -a vs <<<"${MPS_VARIANTS:-fused,fused --set comm=threadload,gather_then_gemm,naive_remote,threadload_gather,multimem_gather --set fallback=emulate}"
  for v in "${vs[@]}"; do
    r "mps${np}_$(echo $v | tr ' =' '_-' | sed 's/--set_//g')" 90 $MPIRUN -x CUDA_VISIBLE_DEVICES -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -np $np \
      $W run examples/ag_gemm.lua --set variant=$v --shapes-only --shape 1000x1000x1000 --shape $((1024*np))x1536x512 \
      --time-shape 1024x1024x1024 --iters 20
  done
done
if want scalar; then
  for np in 2 4 8; do scalar_runs mps$np $MPIRUN -x CUDA_VISIBLE_DEVICES -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -np $np; done
fi
if want mpstable; then
  for np in 2 4 8; do table_runs mpstable$np $MPIRUN -x CUDA_VISIBLE_DEVICES -x WEFT_CACHE_DIR -x WEFT_SIGNAL_TIMEOUT_MS -np $np; done
fi
want mps && r mps4_timeout_pulled 60 $MPIRUN -x CUDA_VISIBLE_DEVICES -x WEFT_CACHE_DIR -x WEFT_FAULT=mute:2:pulled -x WEFT_SIGNAL_TIMEOUT_MS=300 -np 4 \
  $W run examples/ag_gemm.lua --set comm=threadload --shapes-only --shape 1000x1000x1000 --no-time
mps_stop
fi
# ---- ncu (clocks and caches left alone) over one launch of each PROF_CONFIGS entry (as PP_CONFIGS)
# at PROF_SHAPE, and over torch.matmul's (cuBLAS) at the same shape: where the time goes
PROF_SHAPE=${PROF_SHAPE:-1024x1024x1024}
PROF_NCU="ncu --clock-control none --cache-control none --launch-skip 5 --launch-count 1 --section SpeedOfLight
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats
  --section Occupancy --section SchedulerStats"
prof_grep() { grep -E "Context 1|Duration|Elapsed Cycles|SM Frequency|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Grid Size|Block Size|Registers Per|Dynamic Shared|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit" "$1" | head -30 >>"$S"; }
IFS=, read -r -a prof_configs <<<"${PROF_CONFIGS:-tile.m=64 tile.n=128 consumers=1 stages=6}"
want prof && for t in "${prof_configs[@]}"; do
  sets=$(set_args "$t")
  n="prof_$(echo $t | tr ' =' '_-')"
  # timed, not checked: the CPU reference of a large PROF_SHAPE (4096^3) would take minutes
  r "$n" 120 $PROF_NCU -k regex:weft_ $W run examples/gemm.lua $sets --no-check --shapes-only --time-shape $PROF_SHAPE --iters 3
  prof_grep "$O/logs/$n.log"
done
if want prof; then
  IFS=x read -r pm pn pk <<<"$PROF_SHAPE"
  cat >/tmp/prof_mm.py <<PY
import torch
a = torch.randn($pm, $pk, device="cuda", dtype=torch.bfloat16)
b = torch.randn($pk, $pn, device="cuda", dtype=torch.bfloat16)
for _ in range(20): c = a @ b
torch.cuda.synchronize()
PY
  r prof_torch 120 $PROF_NCU -k regex:'gemm|nvjet|sm90' python3 /tmp/prof_mm.py
  prof_grep "$O/logs/prof_torch.log"
fi
# ---- the SASS of the GEMM's main loop (SASS_SETS: one space-separated --set list, as PP_CONFIGS)
$W build examples/gemm.lua $(set_args "${SASS_SETS:-}") -o /tmp/gemm_build >/dev/null 2>&1
/usr/local/cuda/bin/cuobjdump -sass /tmp/gemm_build/*.cubin >"$O/logs/gemm_sass.txt" 2>&1
echo "HGMMA in the GEMM: $(grep -c HGMMA "$O/logs/gemm_sass.txt" 2>/dev/null)" >>"$S"
# the seed's table with weft's numbers beside it (one rank per GPU, 1024^3)
if [ "$NG" -gt 1 ] && { want gpus || want gpuscalar; }; then
  L=$O/logs
  python3 bench/seed_table.py naive_remote=$L/gpus${P}_naive_remote.log threadload_gather=$L/gpus${P}_threadload_gather.log \
    multimem_gather=$L/gpus${P}_multimem_gather.log gather_then_gemm=$L/gpus${P}_gather_then_gemm.log \
    gather_then_gemm_multimem=$L/gpus${P}_gather_then_gemm_comm-multimem_fallback-emulate.log fused=$L/gpus${P}_fused.log \
    fused_push=$L/gpus${P}_fused_comm-multimem_fallback-emulate.log fused_tma=$L/gpus${P}_fused_comm-tma.log >>"$S" 2>&1
fi
tar czf "$O/ag_gemm_logs.tgz" -C "$O" logs && rm -rf "$O/logs"
