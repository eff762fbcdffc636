// templates/gemm_rs.cu: family gemm_rs -- rank r gets rows r*M/P .. of sum over the ranks of
// A_r . B_r (the row-parallel linear layer): weft/gemm_rs.cuh (reduce = "ordered": the rank-order
// fold, the same bits every run), weft/gemm_rs_atomic.cuh (which includes it; "atomic": bulk
// reduce-adds, not bit-stable), weft/gemm_kernel.cuh the GEMM; the WGMMA and config generated below.
#include "weft/gemm_rs_atomic.cuh"

${wgmma}

${cfg}

// The parameter list (args, tensor maps, comm) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}, 1) ${name}(${params}) {
  ${body}
}
