// templates/gemm_ar.cu: family gemm_ar -- every rank gets all of the sum over the ranks of
// A_r . B_r (the row-parallel linear layer, kept whole), folded in rank order by each rows'
// owner: the same bits on every rank and every run.  weft/gemm_ar.cuh has the protocol, the
// fold and the gather, weft/gemm_kernel.cuh the GEMM; the WGMMA instruction for this tile and
// the GEMM's config struct are generated below.
#include "weft/gemm_ar.cuh"

${wgmma}

${cfg}

// The parameter list (args, tensor maps, comm) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
