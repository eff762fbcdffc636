// templates/cluster_reduce.cu: family cluster_reduce -- seed 000's cluster_allreduce as a kernel.
// Each CTA block-reduces THREADS x W inputs per iteration, then combines across the cluster.
// Every CTA writes what it got back (from its last thread, which proves the result reached the
// whole block), so a test can check bit-identity across the CTAs of a cluster.
//   in:  [clusters][CLUSTER][ITERS][THREADS][W] f32
//   out: [clusters][CLUSTER][ITERS][W] f32
// need_tail_sync = false exercises the two-slot alternation, with one retiring barrier at exit.
// exchange = "push" uses the st.async variant (cluster.cuh) instead; need_tail_sync must be false.
#include "weft/block.cuh"
#include "weft/cluster.cuh"

struct Op {
  __device__ __forceinline__ static float identity() { return ${op_identity}; }
  __device__ __forceinline__ static float combine(float a, float b) { return ${op_combine}; }
};

namespace {
constexpr int THREADS = ${threads};
constexpr int CLUSTER = ${cluster};
constexpr int W = ${width};
constexpr int ITERS = ${iters};
constexpr bool TAIL_SYNC = ${need_tail_sync};
constexpr bool PUSH = ${push};   // exchange = "push": st.async + mbarrier instead of barrier + mapa loads
}

// The parameter list (out, in, clusters) is rendered from the manifest by gen/core/weft.lua, in the
// order the runtime passes them: the signature cannot disagree with the manifest.
extern "C" __global__ void __launch_bounds__(THREADS) ${name}(${params}) {
  using namespace weft;
  using C = Elementwise<Op>;
  __shared__ float scratch[(THREADS / 32) * W];
  __shared__ float slots[2][2 * W];
  __shared__ PushSlots<CLUSTER, W> push;
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  const long cta = (long)(blockIdx.x / CLUSTER) * CLUSTER + rank;
  if constexpr (PUSH) cluster_push_init<CLUSTER, W>(push);
  for (int it = 0; it < ITERS; ++it) {
    const float *p = in + ((cta * ITERS + it) * THREADS + threadIdx.x) * W;
    Vals<W> v;
#pragma unroll
    for (int i = 0; i < W; ++i) v.v[i] = p[i];
    v = block_reduce<C, THREADS, W>(v, scratch);
    Vals<W> r;
    if constexpr (PUSH) {
      r = cluster_allreduce_push<CLUSTER, C, W>(push, (u32)it, v);
    } else {
      float *slot = TAIL_SYNC ? slots[0] : slots[it & 1];
      r = cluster_allreduce<CLUSTER, TAIL_SYNC, C, W>(slot, v);
    }
    if (threadIdx.x == THREADS - 1) {
#pragma unroll
      for (int i = 0; i < W; ++i) out[(cta * ITERS + it) * W + i] = r.v[i];
    }
  }
  if constexpr (!TAIL_SYNC || PUSH) cluster_retire<CLUSTER>();
}
