// weft/gemm_splitk.cuh: split-K over a cluster of SPLITK = S CTAs (2..8), reduced through
// distributed shared memory in a fixed order, so that the sum's order -- and its bits -- never
// depend on timing.  All S CTAs of a cluster compute the same tile, CTA r over the k-blocks
// [r KB / S, (r + 1) KB / S).  (With SPLIT_TAIL only the last, partial wave's tiles are split:
// weft/gemm_sched.cuh's GemmWalk.)  Two ways to sum them:
//
// combine (the tree): for l = 1, 2, 4, ...: a CTA whose rank has bit l clear receives the
// partial of rank + l (if it exists) and adds it to its own; a CTA whose lowest set bit is l
// sends its sum (its own and its subtree's) to rank - l and is done.  Rank 0 ends with
// ((p0 + p1) + (p2 + p3)) + ... and stores the tile.  log2(S) steps, each waiting on the one
// before.  One receive buffer per CTA (red: the f32 tile) and two mbarriers (SMEM_RED_BAR):
//   full  this CTA's buffer holds a partial: completes once per reception (one arrival, the
//         sender's, release at cluster scope after a named barrier over its consumers, so it
//         carries every consumer's stores)
//   go    this CTA may send: completes once per tile (one arrival, its receiver's, once the
//         receiver has read every earlier partial of the tile out of its buffer)
// A sender waits for go before writing, so a buffer is never rewritten while it is read, and
// the two barriers never run more than one phase ahead of their waiters.
//
// scatter (flat; swap_ab's tiles, whose C is stored straight from registers, where the slots
// below fit in the tree's buffer: FLAT): the accumulators' J = ACC_N / 8 column blocks (C's rows)
// fall into S slices, CTA r's the blocks [r J / S, (r + 1) J / S).  Every CTA writes each peer's slice of its partial into that peer's slot for it
// (red: S - 1 slots of the largest slice), all at once; then each sums its own slice in rank
// order, p0 + p1 + ... + p(S-1), and stores those rows of C.  One step for any S, and the
// stores are spread over the cluster.  The barriers count S - 1 arrivals:
//   full  completes once per tile: every peer's slice has been written here (each peer's one
//         arrival, after its consumers' named barrier)
//   go    completes once per tile: every peer has read this CTA's slices of it (each peer's one
//         arrival, after its consumers' named barrier); this CTA waits for tile i - 1's before
//         it writes tile i's (its first tile's slots are free)
// Thread 0 hands each over with one fence.acq_rel.cluster, then a relaxed arrive on every peer:
// an arrive.release.cluster is a fence of its own (~750 cycles on H100: bench/xfer_rate.cu), and
// one per peer made the hand-over grow with S.
// full's phase i cannot complete before this CTA reads tile i - 1 (a peer writes tile i only
// after this CTA's go for tile i - 1), and go's phase i cannot begin before this CTA writes tile
// i: neither runs more than one phase ahead of its waiter.  After its last split tile a CTA gives
// no go (no CTA of the tile has another: they walk the same tiles); the kernel's closing cluster
// barrier keeps every CTA's shared memory until the full arrivals have landed.  Each CTA keeps
// its own ring; no stage is shared.
//
// VIA_L2 (gen/core/gemm.lua's FLAT_VIA_L2): the same slots, in the same layout, in the runtime's
// workspace (CTA r's where stream-K keeps CTA r's partial) instead of the peers' shared memory;
// st.global to write, ld.global.cg to read (from L2: a line an earlier tile left in this SM's L1
// must not answer), the same barriers.  Their release and acquire at cluster scope order global
// memory as they do shared (a scope covers every state space), so the hand-over is unchanged.
// bench/xfer_rate.sh measures which way moves a slice faster.
//
// A consumer warp whose 16 rows of a 64-row group all lie past the matrix's last row (swapped:
// B's) neither sends nor reads them (decode: M = 16 moves a quarter of the tile).  Both sides
// decide from the same tile and row count, so they agree.
#pragma once
#include "weft/bulk.cuh"
#include "weft/cluster.cuh"
#include "weft/gemm.cuh"
#include "weft/gemm_streamk.cuh"
#include "weft/types.cuh"

namespace weft {

template <class Cfg> struct SplitK {
  static constexpr int S = Cfg::SPLITK;
  // scatter where its S - 1 slots fit in the tree's buffer, the f32 partial tile (the layout's
  // red; gen/core/gemm.lua): J column blocks in S slices, (S - 1) ceil(J / S) <= J -- every S up
  // to 6 for J >= 5, and 8 from J = 21 (168 rows)
  static constexpr int J = Cfg::ACC_N / 8, QMAX = (J + S - 1) / S;
  static constexpr bool FLAT = Cfg::SWAP && S > 1 && (S - 1) * QMAX <= J;
  // the flat sum's slots in the runtime's workspace (L2) rather than the peers' shared memory
  // (gen/core/gemm.lua's FLAT_VIA_L2): CTA r's slots where stream-K keeps CTA r's partial
  static constexpr bool VIA_L2 = FLAT && Cfg::FLAT_L2;
  static_assert(!Cfg::FLAT_L2 || VIA_L2, "the flat sum through L2 is a flat sum");
  u64 *bar;       // [0] full, [1] go
  float *red;     // CONSUMERS * 128 threads x (MR * BN / 2) floats (the tree's partial tile; scatter's slots in it)
  u32 got = 0;    // the tree's receptions so far (full's phase)
  float *l2 = nullptr;   // VIA_L2: the workspace's slots of this cluster's CTA 0 (use_workspace)
  __device__ __forceinline__ explicit SplitK(char *base) {
    bar = (u64 *)(base + Cfg::SMEM_RED_BAR);
    red = (float *)(base + Cfg::SMEM_RED);
  }
  // one thread, beside the ring's barriers
  __device__ __forceinline__ void init() {
    if constexpr (S > 1) {
      constexpr u32 ARRIVALS = FLAT ? S - 1 : 1;   // scatter: one from each peer; the tree: one
      mbar_init(&bar[0], ARRIVALS);
      mbar_init(&bar[1], ARRIVALS);
    }
  }
  // VIA_L2: ws is the runtime's workspace; CTA r of the cluster is block cta0 + r of the grid (a
  // split cluster is S consecutive blocks along x)
  __device__ __forceinline__ void use_workspace(void *ws, long cta0) {
    if constexpr (VIA_L2)
      l2 = (float *)((char *)ws + Cfg::STREAMK_HEADER + (long)Cfg::STREAMK_FLAGS * 4) + cta0 * (Cfg::STREAMK_SLOT / 4);
  }
  // scatter's slices: CTA r's column blocks of the accumulators are [lo(r), lo(r + 1))
  template <int J> static constexpr __device__ int lo(int r) { return r * J / S; }
  template <int J> static constexpr __device__ int owner(int j) {
    int r = 0;
    while (r + 1 < S && lo<J>(r + 1) <= j) ++r;
    return r;
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

  // The flat sum of the CTA's i-th split tile (swap_ab).  The NT consumer threads of each CTA call
  // it with their accumulators; last: the CTA has no later split tile; rows_left: B's rows from
  // this consumer's first on.  Afterwards the column blocks [lo(crank), lo(crank + 1)) of acc hold
  // the sum, which this CTA stores.
  // red: sender q's slot in CTA r is q (q < r) or q - 1; block j of its slice, of 64-row group
  // mi, of thread ct at ((slot * MR + mi) * QMAX + j - lo(r)) * NT + ct quads.
  template <int MR, int ACC_N, int NT>
  __device__ __forceinline__ void scatter(float (&acc)[MR][ACC_N / 2], int crank, int i, bool last, long rows_left) {
    static_assert(FLAT && ACC_N == Cfg::ACC_N, "the flat sum's slots fit in the partial tile's buffer");
    static_assert(!VIA_L2 || (long)(S - 1) * MR * QMAX * NT * 16 <= Cfg::STREAMK_SLOT,
                  "the flat sum's slots fit in a CTA's slot of the workspace (gen/core/gemm.lua streamk_slot)");
    const int ct = threadIdx.x - 128;   // (consumers start at warpgroup 1)
    const int w16 = (ct % 128) / 32 * 16;
    const u32 red0 = smem_addr(red) + 16u * (u32)ct;
    if (i > 0) mbar_wait<true>(&bar[1], (u32)(i - 1) & 1);   // every peer has read my slices of tile i - 1
    u32 dst[S] = {};   // red0 in each CTA (distributed shared memory's slots)
    if constexpr (!VIA_L2) {
#pragma unroll
      for (int r = 0; r < S; ++r) dst[r] = map_shared_rank(red0, (u32)r);
    }
#pragma unroll
    for (int mi = 0; mi < MR; ++mi) {
      if (mi * 64 + w16 >= rows_left) continue;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const int r = owner<J>(j);
        if (r == crank) continue;
        const int slot = crank < r ? crank : crank - 1;
        const int at = ((slot * MR + mi) * QMAX + j - lo<J>(r)) * NT;   // the quad's index in CTA r's slots
        if constexpr (VIA_L2)
          st_f4(l2 + (long)r * (Cfg::STREAMK_SLOT / 4) + 4 * (at + ct), acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2],
                acc[mi][4 * j + 3]);
        else
          st_shared_cluster_v4(dst[r] + 16u * (u32)at, acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2],
                               acc[mi][4 * j + 3]);
      }
    }
    // every consumer's stores, then one release fence (cumulative over what the barrier ordered)
    // and an arrive on each peer
    bar_sync(BAR_SPLITK, NT);
    if (ct == 0) {
      fence_release_cluster();
#pragma unroll
      for (int r = 0; r < S; ++r)
        if (r != crank) mbar_arrive_relaxed_cluster(&bar[0], (u32)r);
    }
    mbar_wait<true>(&bar[0], (u32)i & 1);   // every peer's part of my slice is here
#pragma unroll
    for (int mi = 0; mi < MR; ++mi) {
      if (mi * 64 + w16 >= rows_left) continue;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        if (owner<J>(j) != crank) continue;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int q = 0; q < S; ++q) {   // rank order: p0 + p1 + ... (the first term exactly, not 0 + p0)
          float4 v;
          if (q == crank) v = make_float4(acc[mi][4 * j], acc[mi][4 * j + 1], acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
          else {
            const int at = (((q < crank ? q : q - 1) * MR + mi) * QMAX + j - lo<J>(crank)) * NT;
            if constexpr (VIA_L2) v = ld_cg_f4(l2 + (long)crank * (Cfg::STREAMK_SLOT / 4) + 4 * (at + ct));   // (L2: not a stale L1 line)
            else v = lds_f4(red0 + 16u * (u32)at);
          }
          if (q == 0) sum = v;
          else { sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w; }
        }
        acc[mi][4 * j] = sum.x; acc[mi][4 * j + 1] = sum.y; acc[mi][4 * j + 2] = sum.z; acc[mi][4 * j + 3] = sum.w;
      }
    }
    if (last) return;   // (no tile i + 1 in any CTA of the tile: no go to give)
    bar_sync(BAR_SPLITK, NT);   // every consumer has read its slots
    if (ct == 0) {
      fence_release_cluster();
#pragma unroll
      for (int r = 0; r < S; ++r)
        if (r != crank) mbar_arrive_relaxed_cluster(&bar[1], (u32)r);   // its go for tile i + 1: my slots for it are free
    }
  }
};

}  // namespace weft
