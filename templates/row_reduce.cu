// templates/row_reduce.cu: family row_reduce -- out[r] = op over x[r][0..cols) in f32,
// one row per cluster of ${cluster} CTAs (seed 000's cluster_allreduce across the row).
#include "weft/row_reduce.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

extern "C" __global__ void __launch_bounds__(${threads}, ${min_blocks}) ${name}(float *out, const weft::${ctype} *x, int rows, int cols) {
  weft::row_reduce<weft::${ctype}, Op, ${cluster}, ${threads}, ${unroll}, ${push}>(out, x, rows, cols);
}
