// templates/allreduce.cu: family allreduce -- y = ${op_name} over the ranks of x (${ctype}),
// folded in rank order in f32 (weft/allreduce.cuh has the data path and the protocol).
#include "weft/allreduce.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

extern "C" __global__ void __launch_bounds__(${bounds}) ${name}(weft::${ctype} *y, const weft::${ctype} *x, long long n,
                                                                const __grid_constant__ weft::Comm comm) {
  weft::allreduce<weft::${ctype}, Op, ${algo}, ${multimem}, ${mop}, ${pdl}>(y, x, (long)n, comm);
}
