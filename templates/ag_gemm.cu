// templates/ag_gemm.cu: family ag_gemm, variant ${variant} -- C = allgather(A) . B on every rank
// (seed 001's fused kernels: scalar, gather + GEMM, and the persistent TMA + WGMMA one).
// weft/ag_gemm.cuh has the kernels, weft/ag_protocol.cuh the protocol, weft/gemm_kernel.cuh the
// GEMM; the WGMMA instruction for this tile and the GEMM's config struct are generated below.
#include "weft/ag_gemm.cuh"

${wgmma}

${cfg}

// The parameter list (args, tensor maps, comm) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
