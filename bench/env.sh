#!/usr/bin/env bash
# bench/env.sh: source it first in every script that runs on the GPU machines.
#  - NVRTC from the toolkit;
#  - NVLink multicast switched off, for this process and every child (DEVICE.md: never
#    multicast on these machines);
#  - mpirun as root, and $MPIRUN, which passes all of the above to every rank;
#  - nccl_lib_default: the NCCL the baselines open (WEFT_NCCL_LIB), torch's or the system's;
#  - link_built_at: the path build/ was made at (ctest's files name it), made to reach this copy.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 WEFT_MULTICAST=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN="mpirun --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x WEFT_MULTICAST"
nccl_lib_default() {   # torch's NCCL if torch is installed, else the system's (a function: importing torch is slow)
  python3 -c "import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print((glob.glob(d + '/nvidia/nccl/lib/libnccl.so*') + glob.glob(d + '/torch/lib/libnccl.so*') + ['libnccl.so.2'])[0])" 2>/dev/null || echo libnccl.so.2
}
# The sixteen GEMM shapes off the published set that every GEMM session times (bench/gemm_session.sh
# offset, bench/gemm_rule_rows.sh)
GEMM_OFFSET_SHAPES=3x11008x4096,48x4096x11008,200x5120x5120,777x14336x4096,3000x11008x4096,1x5120x13824,33x13824x5120,96x2560x2560,512x12288x4096,7x8192x1024,130x1536x8960,1500x8960x1536,24x7168x2048,640x2048x7168,5000x5000x5000,2304x2304x2304
set_args() {   # set_args "k=v k2=v2" -> "--set k=v --set k2=v2" (a config as the bench scripts list them)
  local kv out=""
  for kv in $1; do out="$out --set $kv"; done
  echo "$out"
}
# each `weft run` GEMM timing row (ag_gemm) as "  MxNxK weft US cublas US ratio R" (graph replay):
# the one place that knows the row's columns (an awk program, for scripts that add to it)
GEMM_RUN_ROW='$1=="ag_gemm"{printf "  %sx%sx%s weft %s cublas %s ratio %s\n", $5, $6, $7, $11, $15, $19}'
gemm_run_rows() {   # gemm_run_rows LOG...: those rows of the logs
  awk "$GEMM_RUN_ROW" "$@"
}
link_built_at() {   # built_at=$(link_built_at ROOT) || exit 1: the path build/ was made at, made to reach ROOT
  # ctest's files hold absolute paths into the tree build/ was made in (WEFT_BUILT_AT; else the
  # source directory build/CTestTestfile.cmake names; else /work/main), so that path must lead to
  # ROOT, this copy.  Anything there but a link is refused (1, with the message): going on would
  # run another tree's files, or every test "Not Run".
  local made
  made=$(sed -n 's|^# Source directory: \(/.*\)$|\1|p' "$1/build/CTestTestfile.cmake" 2>/dev/null | head -1)
  local at=${WEFT_BUILT_AT:-${made:-/work/main}}
  if ! [ "$1" -ef "$at" ]; then
    if [ -e "$at" ] && [ ! -L "$at" ]; then
      echo "bench: $at (where build/ was made; WEFT_BUILT_AT) exists and is not a link to $1: move it, or set WEFT_BUILT_AT to the path build/ was made at" >&2
      return 1
    fi
    if ! { mkdir -p "$(dirname "$at")" && ln -sfnT "$1" "$at"; }; then
      echo "bench: cannot link $at (where build/ was made; WEFT_BUILT_AT) to $1 (ctest's files name that path)" >&2
      return 1
    fi
  fi
  echo "$at"
}
