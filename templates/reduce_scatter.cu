// templates/reduce_scatter.cu: family reduce_scatter -- rank r gets y = ${op_name} over the ranks of
// x[r*n .. r*n+n) (${ctype}), folded in rank order in f32 (weft/collectives.cuh: data path and protocol).
#include "weft/collectives.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

// The parameter list (y, x, n, then comm) is rendered from the manifest by gen/core/weft.lua.
extern "C" __global__ void __launch_bounds__(${threads}) ${name}(${params}) {
  weft::reduce_scatter<weft::${ctype}, Op, ${multimem}, ${mop}, ${pdl}, ${np}>(y, x, (long)n, comm);
}
