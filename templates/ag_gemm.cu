// templates/ag_gemm.cu: family ag_gemm, variant ${variant} -- C = allgather(A) . B on every rank
// (or the plain GEMM).  weft/ag_gemm.cuh has the protocol and the kernels, weft/gemm.cuh the
// TMA / mbarrier / WGMMA machinery; the WGMMA instruction for this tile is generated below.
#include "weft/ag_gemm.cuh"

${wgmma}

// The parameter list (args, tensor maps, comm) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
