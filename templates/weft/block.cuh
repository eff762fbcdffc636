// weft/block.cuh: reduction of W-wide values across one thread block.
// The order of combination is fixed by the thread layout (a shuffle tree in each warp, then a
// shuffle tree over the warps' results), so the same inputs always give the same bits.
#pragma once
#include "weft/ops.cuh"

namespace weft {

// Returns the block's combined value in thread 0 (other threads: unspecified).
// scratch: (THREADS / 32) * W floats of shared memory.  The caller must put a __syncthreads()
// between two calls that share scratch (cluster_allreduce provides one).
template <class C, int THREADS, int W>
__device__ __forceinline__ Vals<W> block_reduce(Vals<W> v, float *scratch) {
  static_assert(THREADS % 32 == 0, "threads must be a multiple of 32");
  constexpr int WARPS = THREADS / 32;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    Vals<W> o;
#pragma unroll
    for (int i = 0; i < W; ++i) o.v[i] = __shfl_down_sync(0xffffffffu, v.v[i], off);
    v = C::combine(v, o);
  }
  if constexpr (WARPS > 1) {
    // Warp partials meet in warp 0 and combine as a shuffle tree (log2(WARPS) steps, not a
    // serial fold of WARPS): the tree's shape is fixed, so the bits still are.
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < W; ++i) scratch[warp * W + i] = v.v[i];
    }
    __syncthreads();
    if (warp == 0) {
      if (lane < WARPS) {
#pragma unroll
        for (int i = 0; i < W; ++i) v.v[i] = scratch[lane * W + i];
      }
#pragma unroll
      for (int off = 1; off < WARPS; off <<= 1) {
        Vals<W> o;
#pragma unroll
        for (int i = 0; i < W; ++i) o.v[i] = __shfl_down_sync(0xffffffffu, v.v[i], off);
        // lanes that are multiples of 2*off combine with lane + off: a fixed binary tree
        if ((lane & (2 * off - 1)) == 0 && lane + off < WARPS) v = C::combine(v, o);
      }
    }
  }
  return v;
}

}  // namespace weft
