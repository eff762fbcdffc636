// weft/gemm_splitk.cuh: split-K over a cluster of SPLITK = S CTAs (2..8), reduced through
// distributed shared memory in a fixed tree, so that the sum's order -- and its bits -- never
// depend on timing.  All S CTAs of a cluster compute the same tile, CTA r over the k-blocks
// [r KB / S, (r + 1) KB / S).  Then, for l = 1, 2, 4, ...: a CTA whose rank has bit l clear
// receives the partial of rank + l (if it exists) and adds it to its own; a CTA whose lowest set
// bit is l sends its sum (its own and its subtree's) to rank - l and is done.  Rank 0 ends with
// ((p0 + p1) + (p2 + p3)) + ... and stores the tile.  log2(S) steps, each moving one partial
// tile per receiving CTA, all pairs of a step at once.  (With SPLIT_TAIL only the last, partial
// wave's tiles are split: weft/gemm_sched.cuh's GemmWalk.)
//
// One receive buffer per CTA (red: the f32 tile) and two mbarriers (SMEM_RED_BAR):
//   full  this CTA's buffer holds a partial: completes once per reception (one arrival, the
//         sender's, release at cluster scope after a named barrier over its consumers, so it
//         carries every consumer's stores)
//   go    this CTA may send: completes once per tile (one arrival, its receiver's, once the
//         receiver has read every earlier partial of the tile out of its buffer)
// A sender waits for go before writing, so a buffer is never rewritten while it is read, and
// the two barriers never run more than one phase ahead of their waiters.  Each CTA keeps its
// own ring; no stage is shared.
//
// A consumer warp whose 16 rows of a 64-row group all lie past the matrix's last row neither
// sends nor reads them (decode: M = 16 moves a quarter of the tile).  Both sides decide from the
// same tile and row count, so they agree.
#pragma once
#include "weft/bulk.cuh"
#include "weft/cluster.cuh"
#include "weft/gemm.cuh"
#include "weft/types.cuh"

namespace weft {

template <class Cfg> struct SplitK {
  static constexpr int S = Cfg::SPLITK;
  u64 *bar;       // [0] full, [1] go
  float *red;     // CONSUMERS * 128 threads x (MR * BN / 2) floats
  u32 got = 0;    // receptions so far (full's phase)
  __device__ __forceinline__ explicit SplitK(char *base) {
    bar = (u64 *)(base + Cfg::SMEM_RED_BAR);
    red = (float *)(base + Cfg::SMEM_RED);
  }
  // one thread, beside the ring's barriers
  __device__ __forceinline__ void init() {
    if constexpr (S > 1) {
      mbar_init(&bar[0], 1);
      mbar_init(&bar[1], 1);
    }
  }
  // The reduction of the CTA's i-th split tile (its k-blocks: split_range).  The NT consumer threads of each CTA call it with their
  // accumulators; rows_left: rows of the matrix from this consumer's first row on.  Returns true
  // in rank 0, which holds the sum and stores it.  red: thread ct's v-th quad at (v * NT + ct) * 4
  // (16-byte accesses, no bank conflicts).
  template <int MR, int BN, int NT>
  __device__ __forceinline__ bool combine(float (&acc)[MR][BN / 2], int crank, int i, long rows_left) {
    const int ct = threadIdx.x - 128;   // (consumers start at warpgroup 1)
    const int w16 = (ct % 128) / 32 * 16;   // this warp's first row in each 64-row group
    const u32 red0 = smem_addr(red) + 16u * (u32)ct;
    int l = 1;
    for (; l < S && (crank & l) == 0; l <<= 1) {
      if (crank + l >= S) continue;
      if (ct == 0) mbar_release_cluster(&bar[1], (u32)(crank + l));   // its go: the buffer is free
      mbar_wait<true>(&bar[0], got & 1);
      ++got;
#pragma unroll
      for (int mi = 0; mi < MR; ++mi) {
        if (mi * 64 + w16 >= rows_left) continue;
#pragma unroll
        for (int q = 0; q < BN / 2; q += 4) {
          const float4 v = lds_f4(red0 + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT));
          acc[mi][q] += v.x; acc[mi][q + 1] += v.y; acc[mi][q + 2] += v.z; acc[mi][q + 3] += v.w;
        }
      }
      bar_sync(BAR_SPLITK, NT);   // every consumer has read this partial
    }
    if (crank == 0) return true;
    // l is crank's lowest set bit: send the sum to crank - l
    mbar_wait<true>(&bar[1], (u32)i & 1);
    const u32 dst = map_shared_rank(red0, (u32)(crank - l));
#pragma unroll
    for (int mi = 0; mi < MR; ++mi) {
      if (mi * 64 + w16 >= rows_left) continue;
#pragma unroll
      for (int q = 0; q < BN / 2; q += 4)
        st_shared_cluster_v4(dst + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT), acc[mi][q], acc[mi][q + 1], acc[mi][q + 2],
                             acc[mi][q + 3]);
    }
    // every consumer's stores, then one release (cumulative: it carries what the barrier ordered)
    bar_sync(BAR_SPLITK, NT);
    if (ct == 0) mbar_release_cluster(&bar[0], (u32)(crank - l));
    return false;
  }
};

}  // namespace weft
