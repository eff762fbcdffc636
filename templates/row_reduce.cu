// templates/row_reduce.cu: family row_reduce -- out[r] = op over x[r][0..cols) in f32,
// one row per cluster of ${cluster} CTAs (seed 000's cluster_allreduce across the row).
#include "weft/row_reduce.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

// The parameter list (out, x, rows, cols) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(${params}) {
  weft::row_reduce<weft::${ctype}, Op, ${cluster}, ${threads}, ${unroll}, ${push}>(out, x, rows, cols);
}
