// templates/gemm.cu: family gemm -- weft's GEMM on one GPU, C[M,N] = A[M,K] . B (the compute
// core of ag_gemm's fused kernel).  weft/gemm_kernel.cuh has the kernel; the WGMMA instruction
// for this tile and the config struct it takes are generated below.
#include "weft/gemm_kernel.cuh"

${wgmma}

${cfg}

// The parameter list (args, tensor maps) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
