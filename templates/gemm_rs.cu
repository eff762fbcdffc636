// templates/gemm_rs.cu: family gemm_rs -- rank r gets rows r*M/P .. of sum over the ranks of
// A_r . B_r (the row-parallel linear layer), folded in rank order (the same bits every run).
// weft/gemm_rs.cuh has the protocol and the fold, weft/gemm_kernel.cuh the GEMM; the WGMMA
// instruction for this tile and the GEMM's config struct are generated below.
#include "weft/gemm_rs.cuh"

${wgmma}

${cfg}

// The parameter list (args, tensor maps, comm) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
