// weft/gemm_splitk.cuh: split-K over a cluster of two CTAs, reduced through distributed shared
// memory.  Both CTAs of a cluster compute the same tile, the first (crank 0) over the first
// half of the k-blocks, the second over the rest.  The second writes its f32 partial sums into
// the first's shared memory (st.shared::cluster, each thread its own fragment, 16 bytes at a
// time); after a named barrier over its consumers one thread arrives on the first's red_full
// (release, cluster scope).  The first waits (acquire, cluster scope), adds them in -- always
// in the same order, so the result is deterministic -- and after its own named barrier one
// thread arrives on the second's red_empty (the buffer may be rewritten); then it stores the
// tile.  Each CTA keeps its own ring; no stage is shared.
// Shared memory (Cfg's layout): two mbarriers at SMEM_RED_BAR (red_full, used in the first CTA;
// red_empty, in the second), the partial tile at SMEM_RED.
#pragma once
#include "weft/bulk.cuh"
#include "weft/cluster.cuh"
#include "weft/gemm.cuh"
#include "weft/types.cuh"

namespace weft {

template <class Cfg> struct SplitK {
  u64 *bar;     // [0] red_full, [1] red_empty
  float *red;   // CONSUMERS * 128 threads x (MR * BN / 2) floats
  int kb0, kb1;   // this CTA's k-blocks [kb0, kb1)
  __device__ __forceinline__ SplitK(char *base, int kblocks, int crank) {
    bar = (u64 *)(base + Cfg::SMEM_RED_BAR);
    red = (float *)(base + Cfg::SMEM_RED);
    kb0 = Cfg::SPLITK > 1 && crank ? (kblocks + 1) / 2 : 0;
    kb1 = Cfg::SPLITK > 1 && !crank ? (kblocks + 1) / 2 : kblocks;
  }
  // one thread, beside the ring's barriers: one arrival each (the other CTA's consumers' one)
  __device__ __forceinline__ void init() {
    if constexpr (Cfg::SPLITK > 1) {
      mbar_init(&bar[0], 1);
      mbar_init(&bar[1], 1);
    }
  }
  // The hand-over of the CTA's i-th tile.  The NT consumer threads of each CTA call it with
  // their accumulators.  The second CTA (crank 1) sends its partial sums and returns false (it
  // stores nothing); the first adds them and returns true.  red: thread ct's v-th quad at
  // (v * NT + ct) * 4 (16-byte stores, no bank conflicts).
  template <int MR, int BN, int NT> __device__ __forceinline__ bool combine(float (&acc)[MR][BN / 2], int crank, int i) {
    const int ct = threadIdx.x - 128;   // (consumers start at warpgroup 1)
    const u32 red0 = smem_addr(red) + 16u * (u32)ct;
    if (crank == 1) {
      if (i > 0) mbar_wait<true>(&bar[1], (u32)(i - 1) & 1);   // the first took the last partial
      const u32 dst = map_shared_rank(red0, 0);
#pragma unroll
      for (int mi = 0; mi < MR; ++mi)
#pragma unroll
        for (int q = 0; q < BN / 2; q += 4)
          st_shared_cluster_v4(dst + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT), acc[mi][q], acc[mi][q + 1], acc[mi][q + 2],
                               acc[mi][q + 3]);
      // every consumer's stores, then one release (cumulative: it carries what the barrier ordered)
      bar_sync(BAR_SPLITK, NT);
      if (ct == 0) mbar_release_cluster(&bar[0], 0);
      return false;
    }
    mbar_wait<true>(&bar[0], (u32)i & 1);
#pragma unroll
    for (int mi = 0; mi < MR; ++mi)
#pragma unroll
      for (int q = 0; q < BN / 2; q += 4) {
        const float4 v = lds_f4(red0 + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT));
        acc[mi][q] += v.x; acc[mi][q + 1] += v.y; acc[mi][q + 2] += v.z; acc[mi][q + 3] += v.w;
      }
    bar_sync(BAR_SPLITK, NT);                         // every consumer has read its part:
    if (ct == 0) mbar_arrive_remote(&bar[1], 1);      // the buffer may take the next partial
    return true;
  }
};

}  // namespace weft
