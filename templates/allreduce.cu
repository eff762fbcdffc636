// templates/allreduce.cu: family allreduce -- y = ${op_name} over the ranks of x (${ctype}),
// folded in rank order in f32 (weft/allreduce.cuh has the data path and the protocol).
#include "weft/allreduce.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

// The parameter list (y, x, n, then comm) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(${bounds}) ${name}(${params}) {
  weft::allreduce<weft::${ctype}, Op, ${algo}, ${multimem}, ${mop}, ${pdl}>(y, x, (long)n, comm);
}
