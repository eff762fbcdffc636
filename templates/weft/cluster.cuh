// weft/cluster.cuh: thread-block-cluster primitives and cluster_allreduce.
//
// cluster_allreduce is weft's version of the seed's Mojo `cluster_allreduce` (seed 000):
// - the caller reduces within its CTA first, leaving the CTA's W values in thread 0;
// - every CTA publishes them in its `slot` (2*W floats of shared memory, at the same offset in
//   every CTA) and every CTA gathers every peer's values through distributed shared memory
//   (mapa + ld.shared::cluster) rather than reduce-to-one-then-broadcast;
// - every CTA folds the peers in rank order 0..CLUSTER-1, so the result is bit-identical in
//   every CTA of the cluster and callers may branch on it;
// - the low W floats of the slot are what peers read; the high W carry the result from
//   thread 0 to the rest of the block;
// - TAIL_SYNC: a trailing cluster barrier retires the slot, so the same slot may serve the next
//   combine.  Without it, a caller that combines in a loop alternates two slots: a CTA that
//   races ahead writes the slot its peers are not reading, and it cannot get more than one
//   combine ahead, because each combine starts with a cluster barrier.  Such a caller must
//   call cluster_retire() before exiting, so no CTA leaves while a peer still reads its slot;
// - CLUSTER == 1: no cross-CTA traffic; the call only publishes thread 0's values to the block.
//
// Memory order: thread 0's st.shared of the slot is made visible to peers by
// barrier.cluster.arrive.release, and the peers' ld.shared::cluster come after
// barrier.cluster.wait.acquire.
#pragma once
#include "weft/types.cuh"
#include "weft/ops.cuh"
#include "weft/bulk.cuh"

namespace weft {

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_id_x() {
  u32 r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster must call it (the .aligned form: warp-uniform).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ u32 smem_u32(const void *p) { return smem_addr(p); }
// The address of the same shared-memory location in CTA `rank` of this cluster.
__device__ __forceinline__ u32 map_shared_rank(u32 saddr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(saddr), "r"(rank));
  return r;
}
__device__ __forceinline__ float ld_shared_cluster(u32 addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// Arrive on the mbarrier at bar's offset in CTA `cta` of the cluster (this CTA's own included).
// mbar_release_cluster: release at cluster scope, for a hand-over of data this thread wrote
// into another CTA (split-K's partial sums).  mbar_arrive_remote: the default semantics
// (release, CTA scope), for "my reads of this stage are done": the WGMMAs that read it have
// completed, and nothing this thread wrote is handed over (as CUTLASS's cluster barriers do).
__device__ __forceinline__ void mbar_release_cluster(u64 *bar, u32 cta) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(map_shared_rank(smem_addr(bar), cta))
               : "memory");
}
// A hand-over to several CTAs at once: fence_release_cluster once (cumulative, as the release
// of mbar_release_cluster is), then mbar_arrive_relaxed_cluster on each peer's barrier.  Each
// release.cluster arrive pays the fence itself (~750 cycles on H100, bench/xfer_rate.cu's none);
// this pays it once per hand-over, not once per peer.
__device__ __forceinline__ void fence_release_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive_relaxed_cluster(u64 *bar, u32 cta) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(map_shared_rank(smem_addr(bar), cta))
               : "memory");
}
__device__ __forceinline__ void mbar_arrive_remote(u64 *bar, u32 cta) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(map_shared_rank(smem_addr(bar), cta)) : "memory");
}
// 16 bytes into shared memory of another CTA of the cluster (addr from mapa).
__device__ __forceinline__ void st_shared_cluster_v4(u32 addr, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
template <int CLUSTER> __device__ __forceinline__ void cluster_retire() {
  if constexpr (CLUSTER > 1) cluster_sync();
}

template <int CLUSTER, bool TAIL_SYNC, class C, int W>
__device__ __forceinline__ Vals<W> cluster_allreduce(float *slot, const Vals<W> &v) {
  static_assert(CLUSTER >= 1 && CLUSTER <= 16, "cluster size is 1..16");
  if constexpr (CLUSTER == 1) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < W; ++i) slot[W + i] = v.v[i];
    }
  } else {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < W; ++i) slot[i] = v.v[i];
    }
    cluster_sync();
    if (threadIdx.x == 0) {
      const u32 base = smem_u32(slot);
      Vals<W> peer[CLUSTER];
#pragma unroll
      for (int r = 0; r < CLUSTER; ++r) {   // all loads issued before the fold uses them
        const u32 a = map_shared_rank(base, (u32)r);
#pragma unroll
        for (int i = 0; i < W; ++i) peer[r].v[i] = ld_shared_cluster(a + 4u * i);
      }
      Vals<W> acc = peer[0];
#pragma unroll
      for (int r = 1; r < CLUSTER; ++r) acc = C::combine(acc, peer[r]);
#pragma unroll
      for (int i = 0; i < W; ++i) slot[W + i] = acc.v[i];
    }
  }
  __syncthreads();
  Vals<W> out;
#pragma unroll
  for (int i = 0; i < W; ++i) out.v[i] = slot[W + i];
  if constexpr (TAIL_SYNC) {
    if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();
  }
  return out;
}

// ---- the push variant: st.async into every peer, completion counted on the peer's mbarrier ----
//
// Instead of publish + cluster barrier + pull, each CTA writes its W values straight into every
// peer's receive array (st.async ... mbarrier::complete_tx::bytes), and waits on its own
// mbarrier until all CLUSTER * W * 4 bytes have landed.  No cluster barrier per combine.
// Reuse: combines alternate two receive arrays.  A peer cannot write array b for combine k+2
// before we finish reading it for combine k: to get there it must have received our combine-k+1
// values, which we send only after finishing combine k.  The result reaches the block through
// res[b], alternating the same way.  Call cluster_push_init once (all threads) before the first
// combine, and cluster_retire at exit.
template <int CLUSTER, int W> struct PushSlots {
  float recv[2][CLUSTER * W];
  float res[2][W];
  u64 bar[2];
};

template <int CLUSTER, int W>
__device__ __forceinline__ void cluster_push_init(PushSlots<CLUSTER, W> &s) {
  if constexpr (CLUSTER == 1) return;   // nothing to exchange (and no cluster to address)
  if (threadIdx.x == 0) {
    mbar_init(&s.bar[0], 1);
    mbar_init(&s.bar[1], 1);
    fence_barrier_init();
  }
  if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();   // peers may target our barriers only after this
}

__device__ __forceinline__ void st_async_f32(u32 remote_addr, float v, u32 remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
               :: "r"(remote_addr), "f"(v), "r"(remote_bar) : "memory");
}

// k: the combine's index (0, 1, 2, ...), the same in every CTA of the cluster.
template <int CLUSTER, class C, int W>
__device__ __forceinline__ Vals<W> cluster_allreduce_push(PushSlots<CLUSTER, W> &s, u32 k, const Vals<W> &v) {
  static_assert(CLUSTER >= 1 && CLUSTER <= 16, "cluster size is 1..16");
  const u32 b = k & 1, parity = (k >> 1) & 1;
  if constexpr (CLUSTER == 1) {   // a launch without clusters: mapa and st.async do not apply
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < W; ++i) s.res[b][i] = v.v[i];
    }
  } else if (threadIdx.x < 32) {
    const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
    if (threadIdx.x == 0) mbar_arrive_expect(&s.bar[b], (u32)(CLUSTER * W * 4));
    Vals<W> mine;   // thread 0's values, to lanes 0..CLUSTER-1: lane r sends to peer r
#pragma unroll
    for (int i = 0; i < W; ++i) mine.v[i] = __shfl_sync(0xffffffffu, v.v[i], 0);
    if (threadIdx.x < CLUSTER) {
      const u32 dst = map_shared_rank(smem_u32(&s.recv[b][rank * W]), threadIdx.x);
      const u32 bar = map_shared_rank(smem_u32(&s.bar[b]), threadIdx.x);
#pragma unroll
      for (int i = 0; i < W; ++i) st_async_f32(dst + 4u * i, mine.v[i], bar);
    }
    if (threadIdx.x == 0) {
      mbar_wait(&s.bar[b], parity);
      Vals<W> acc;
#pragma unroll
      for (int i = 0; i < W; ++i) acc.v[i] = s.recv[b][i];
#pragma unroll
      for (int r = 1; r < CLUSTER; ++r) {
        Vals<W> o;
#pragma unroll
        for (int i = 0; i < W; ++i) o.v[i] = s.recv[b][r * W + i];
        acc = C::combine(acc, o);
      }
#pragma unroll
      for (int i = 0; i < W; ++i) s.res[b][i] = acc.v[i];
    }
  }
  __syncthreads();
  Vals<W> out;
#pragma unroll
  for (int i = 0; i < W; ++i) out.v[i] = s.res[b][i];
  return out;
}

// Exchange<CLUSTER, W, PUSH>: the two combine disciplines behind one interface, for kernels
// that combine once per row in a loop.  Declare `__shared__ typename Exchange<...>::Slots s;`,
// call init(s) once (all threads), combine<C>(s, k, v) with k = 0, 1, 2, ... and
// cluster_retire<CLUSTER>() before exit.
template <int CLUSTER, int W, bool PUSH> struct Exchange;
template <int CLUSTER, int W> struct Exchange<CLUSTER, W, false> {
  struct Slots { float s[2][2 * W]; };
  __device__ __forceinline__ static void init(Slots &) {}
  template <class C> __device__ __forceinline__ static Vals<W> combine(Slots &sl, u32 k, const Vals<W> &v) {
    return cluster_allreduce<CLUSTER, false, C, W>(sl.s[k & 1], v);
  }
};
template <int CLUSTER, int W> struct Exchange<CLUSTER, W, true> {
  using Slots = PushSlots<CLUSTER, W>;
  __device__ __forceinline__ static void init(Slots &s) { cluster_push_init<CLUSTER, W>(s); }
  template <class C> __device__ __forceinline__ static Vals<W> combine(Slots &s, u32 k, const Vals<W> &v) {
    return cluster_allreduce_push<CLUSTER, C, W>(s, k, v);
  }
};

// The row loop of the row families: cluster c takes rows c, c + nclusters, ...; a grid of one
// cluster per row runs the body once, a persistent grid many times.  body(row, k) gets the
// combine index k for Exchange; both exchanges need the retiring barrier at the end.
template <int CLUSTER, class Body>
__device__ __forceinline__ void for_each_cluster_row(long rows, Body &&body) {
  const long nclusters = gridDim.x / CLUSTER;
  u32 k = 0;
  for (long row = blockIdx.x / CLUSTER; row < rows; row += nclusters, ++k) body(row, k);
  cluster_retire<CLUSTER>();
}

}  // namespace weft
