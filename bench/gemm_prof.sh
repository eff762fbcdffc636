#!/usr/bin/env bash
# bench/gemm_prof.sh: where weft's GEMM loses to cuBLAS, in one device call (repo root, build/
# carried).  Logs under $OUT (one tarball, prof.tgz) and a short summary printed last.
#   1. names: the kernels torch.mm (cuBLASLt) runs at NAME_SHAPES (tile, stages, cluster, as nvjet
#      names them), bf16, B column-major unless the shape ends in "r" (row-major);
#   2. ncu (clocks and caches left alone, --set full) over one launch of each PROF entry:
#      "SHAPE[r] torch" or "SHAPE[r] k=v k=v ..." (a weft gemm config over examples/gemm.lua);
#   3. sass: cuobjdump -sass of each weft config in PROF (the main loop is what to read).
#   4. runs: RUNS, weft configs timed beside cuBLASLt (weft_ev weft_gr cublas_ev cublas_gr ratio_ev ratio_gr);
#   5. waves: the default example at shapes of 3.9 and 4.0 waves of tiles (quantization).
#   NCU_SECTIONS replaces ncu's --set full (e.g. "--section WarpStateStats --page raw": every stall reason's raw metric;
#   not run on a GPU yet).  NCU_SOURCE=1: ncu also keeps a report and writes, per PROF entry,
#   src_N.csv (each SASS instruction with its warp-stall samples) and raw_N.csv (every metric).
#   PHASES "names prof sass waves" (default)
set -u
. bench/env.sh
O=${OUT:-/tmp/gemm_prof}
L=$O/logs
mkdir -p "$L"
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-prof-cache}
W=build/weft
S=$O/summary.txt
: >"$S"
phases=${PHASES:-names prof sass waves}
want() { case " $phases " in *" $1 "*) return 0;; esac; return 1; }
NAME_SHAPES=${NAME_SHAPES:-"4096x4096x4096r 8192x8192x8192r 1024x14336x4096 1024x10240x8192 256x14336x4096 256x4096x14336 256x10240x8192 128x6144x4096 16x6144x4096 1x6144x4096 4096x8192x8192 16384x6144x4096"}
IFS=';' read -r -a PROF <<<"${PROF:-4096x4096x4096r torch;4096x4096x4096r tile.m=128 tile.n=256 stages=3 epilogue=tma;256x4096x14336 torch;256x4096x14336 tile.m=64 tile.n=128 consumers=1 stages=8 epilogue=tma;256x4096x14336 tile.m=128 tile.n=64 stages=8 epilogue=tma}"

# the torch side: python3 /tmp/mm.py MODE SHAPE... (MODE names: kernel names; MODE prof: 20 launches)
cat >/tmp/mm.py <<'PY'
import sys, torch
mode, shapes = sys.argv[1], sys.argv[2:]
torch.backends.cuda.preferred_blas_library("cublaslt")
for sh in shapes:
    row = sh.endswith("r")
    m, n, k = (int(x) for x in sh.rstrip("r").split("x"))
    a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) - 0.5
    b = (torch.rand(k, n, device="cuda", dtype=torch.bfloat16) - 0.5) if row else \
        (torch.rand(n, k, device="cuda", dtype=torch.bfloat16) - 0.5).t()
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    if mode == "names":
        torch.mm(a, b, out=c); torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            torch.mm(a, b, out=c); torch.cuda.synchronize()
        print(sh, " + ".join(sorted({e.name for e in p.events() if str(e.device_type).endswith("CUDA")})))
    else:
        for _ in range(20): torch.mm(a, b, out=c)
        torch.cuda.synchronize()
PY

if want names; then
  # shellcheck disable=SC2086
  timeout 120 python3 /tmp/mm.py names $NAME_SHAPES >"$L/names.txt" 2>&1
  echo "== cuBLASLt kernels (torch.mm)" >>"$S"; cat "$L/names.txt" >>"$S"
fi

# NCU_SECTIONS: what ncu collects (default the full set; "--section WarpStateStats --page raw" prints
# every warp-stall reason's raw metric)
NCU="ncu --clock-control none --cache-control none --launch-skip 5 --launch-count 1 ${NCU_SECTIONS:---set full}"
i=0
if want prof; then
  for p in "${PROF[@]}"; do
    i=$((i + 1))
    REP=""; [ -n "${NCU_SOURCE:-}" ] && REP="--import-source no -f -o /tmp/rep_$i"
    read -r shp rest <<<"$p"
    row=0; case $shp in *r) row=1; shp=${shp%r};; esac
    if [ "$rest" = torch ]; then
      sfx=""; [ $row = 1 ] && sfx=r
      timeout 200 $NCU $REP -k regex:'nvjet|gemm|sm90|cutlass' python3 /tmp/mm.py prof "$shp$sfx" >"$L/prof_$i.txt" 2>&1
    else
      bl=col; [ $row = 1 ] && bl=row
      # timed, not checked: ncu profiles the 6th launch
      timeout 200 $NCU $REP -k regex:weft_ $W run examples/gemm.lua --set b_layout=$bl $(set_args "$rest") --no-check --shapes-only \
        --time-shape "$shp" --iters 3 >"$L/prof_$i.txt" 2>&1
    fi
    echo "== prof_$i: $p (rc $?)" >>"$S"
    if [ -n "${NCU_SOURCE:-}" ] && [ -f "/tmp/rep_$i.ncu-rep" ]; then
      ncu -i "/tmp/rep_$i.ncu-rep" --page source --csv --print-source sass >"$L/src_$i.csv" 2>&1
      ncu -i "/tmp/rep_$i.ncu-rep" --page raw --csv >"$L/raw_$i.csv" 2>&1
      ncu -i "/tmp/rep_$i.ncu-rep" --page details >"$L/prof_$i.txt" 2>&1
    fi
    grep -E "^  [a-zA-Z_]+.*\(|Duration|Elapsed Cycles|SM Frequency|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Grid Size|Registers Per|L1/TEX Hit|L2 Hit|Shared Memory|Tensor|issue_stalled" \
      "$L/prof_$i.txt" | head -80 >>"$S"
  done
fi

if want sass; then
  j=0
  for p in "${PROF[@]}"; do
    read -r shp rest <<<"$p"
    [ "$rest" = torch ] && continue
    j=$((j + 1))
    bl=col; case $shp in *r) bl=row;; esac
    rm -rf /tmp/sass_build && mkdir -p /tmp/sass_build
    $W build examples/gemm.lua --set b_layout=$bl $(set_args "$rest") -o /tmp/sass_build >"$L/build_$j.txt" 2>&1
    /usr/local/cuda/bin/cuobjdump -sass /tmp/sass_build/*.cubin >"$L/sass_$j.txt" 2>&1
    echo "== sass_$j: $rest: $(grep -c HGMMA "$L/sass_$j.txt") HGMMA, $(wc -l <"$L/sass_$j.txt") lines" >>"$S"
  done
fi
if want runs; then
  # RUNS: "SHAPE[r] k=v ...;..." -- weft's GEMM timed beside cuBLASLt in the same process (weft run;
  # not checked here: the GPU tests check the same kernels)
  IFS=';' read -r -a RUNL <<<"${RUNS:-}"
  for p in "${RUNL[@]}"; do
    read -r shp rest <<<"$p"
    bl=col; case $shp in *r) bl=row; shp=${shp%r};; esac
    $W run examples/gemm.lua --set b_layout=$bl $(set_args "$rest") --no-check --shapes-only --time-shape "$shp" \
      --iters 20 >"$L/run.txt" 2>&1
    echo "$shp $bl $rest | $(grep -E '^ag_gemm ' "$L/run.txt" | tail -1 | awk '{print $10, $11, $14, $15, $18, $19}')" >>"$S"
    cat "$L/run.txt" >>"$L/runs.txt"
  done
fi
if want waves; then
  # wave quantization: 512 tiles of 128 x 256 on 132 SMs (3.9 waves) against 528 (4.0 waves)
  for shp in ${WAVE_SHAPES:-4096x4096x4096 4224x4096x4096 8192x8192x8192 8448x8192x8192}; do
    $W run examples/gemm.lua --no-check --shapes-only --time-shape "$shp" --iters 20 >"$L/waves_$shp.txt" 2>&1
    echo "== waves $shp: $(grep -E '^ag_gemm |^gemm ' "$L/waves_$shp.txt" | tail -1)" >>"$S"
  done
fi
tar czf "$O/prof.tgz" -C "$O" logs && rm -rf "$L"
cat "$S"
