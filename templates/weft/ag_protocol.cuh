// weft/ag_protocol.cuh: the all-gather protocol of ag_gemm.  C[M,N] = A[M,K] . B where A is row-sharded over the P
// ranks (rank r owns rows r*Ms .. (r+1)*Ms - 1, Ms = M / P, given as `a`) and every rank
// computes all of C.
//
// The symmetric buffer of every rank (weft_comm) holds, per data half h, P regions of Ms x K:
// region s is shard s.  Per launch at epoch e, h = e % 2:
//   publish   each block copies its slice of `a` into its own region[rank][h] (threadload, tma),
//             or into region[rank][h] of every rank (multimem: one multimem.st, or the unicast
//             twin), then sends READY(e) to every rank: pad[READY][rank][block].
//   consume   shard s is used only after READY(e) arrived from every block of rank s:
//               naive_remote  each thread reads A straight from rank s's region (NVLink);
//               threadload    each block first pulls its slice of region s from rank s into its
//                             own region s and says PULLED(e) (to itself); compute waits for
//                             PULLED from every block of its own rank;
//               multimem      region s already arrived in its own buffer;
//               tma (fused)   the TMA unit reads rank s's region directly through a tensor map
//                             over every rank's mapped buffer.
//   schedule  shards in ring order from the rank's own (ring) -- rank r reads r+1 first, so no
//             two ranks read the same owner at once -- or in rank order (rank_order).
// Reuse (the "done" phase): region[h] is rewritten at epoch e + 2.  Before a rank gets there,
// its launch e + 1 waited for READY(e + 1) from every block of every rank, and each block sent
// that only after its rank's launch e had finished (stream order).  Every rank reads every
// shard, so every rank waits for every other: READY(e + 1) acknowledges all reads of epoch e,
// with no extra round.  A timed-out wait records who it waited for, and the kernel runs to its
// end on stale data (the producer stops waiting but keeps loading) instead of hanging.
// Waits poll with relaxed loads, one slot per block of the sender, spread over a warp's lanes;
// a fence.acq_rel.sys after the last slot makes every release the slots carried visible.
#pragma once
#include "weft/launch.cuh"
#include "weft/multimem.cuh"
#include "weft/signal.cuh"
#include "weft/types.cuh"

namespace weft {

enum { SIG_READY = 0, SIG_PULLED = 1 };
enum { COMM_THREADLOAD = 0, COMM_MULTIMEM = 1, COMM_TMA = 2 };

__device__ __forceinline__ void fence_acquire_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// Region s of `base`'s data half h (Ms x K elements of T).
template <class T> __device__ __forceinline__ T *region(const Comm &c, char *base, int h, int s, long shard_elems) {
  return (T *)(base + c.data_offset + (long)h * c.half_bytes) + (long)s * shard_elems;
}

// One thread tells rank `to` that this block reached `signal` for `about` (the sender's rank
// for READY, the shard for PULLED) at epoch e, after a barrier that ordered the writes it
// publishes: pad[signal][about][block] in rank `to`'s pad.
__device__ __forceinline__ void send_signal(const Comm &c, int signal, int to, int about, u64 e) {
  if (c.rank == c.mute_rank && signal == c.mute_signal) return;
  st_release_sys(signal_slot(c, c.peers[to], signal, about, blockIdx.x), e);
}

// Wait until every block of `sender` reached `signal` at epoch e (slots in this rank's pad),
// lanes lane, lane + nl, ... sharing the slots.  Returns 1 where this lane must stop.  A timeout
// names the rank that owes the signal: the sender for READY, this rank itself for PULLED (its
// own blocks pull; `sender` is then the shard).  PULLED waits twice as long: a pull waits for
// its owner's READY first, and a missing READY is the cause worth naming (measured on two GPUs:
// with equal timeouts a muted READY was sometimes reported as rank 0's own missing PULLED).
// wait_blocks_of: the same for any family's signal, the timeout naming `owes`, `patience` times as long.
__device__ __forceinline__ int wait_blocks_of(const Comm &c, int signal, int sender, u64 e, int lane, int nl, int owes,
                                              u64 patience) {
  int stop = 0;
  Timeout to;
  for (int b = lane; b < (int)gridDim.x && !stop; b += nl)
    poll_bounded<false>(c, signal_slot(c, c.peers[c.rank], signal, sender, b), owes, [e](u64 v) { return v >= e; },
                        [](u64 v) { return v; }, stop, to, patience);
  to.report(c, signal, e);
  fence_acquire_sys();
  return stop;
}
__device__ __forceinline__ int wait_blocks(const Comm &c, int signal, int sender, u64 e, int lane, int nl) {
  return wait_blocks_of(c, signal, sender, e, lane, nl, signal == SIG_PULLED ? c.rank : sender, signal == SIG_PULLED ? 2 : 1);
}

// The j-th shard this rank consumes.
template <bool RING> __device__ __forceinline__ int shard_at(const Comm &c, int j) {
  return RING ? (c.rank + j) % c.size : j;
}
// The j-th other rank (j = 0 .. P-2) in the same order: ring from rank + 1, or ascending
// without this rank.  (Pulls and gathers walk only the others: shard_at<false>(1) is not
// "the first peer" -- an earlier loop over shard_at(1 .. P-1) skipped shard 0 under rank_order
// and hung every rank but rank 0 waiting for its own PULLED.)
template <bool RING> __device__ __forceinline__ int peer_at(const Comm &c, int j) {
  return RING ? (c.rank + 1 + j) % c.size : (j < c.rank ? j : j + 1);
}

// Copy this block's slice of n16 16-byte vectors src -> dst (threads tid of nt).  U loads in
// flight per thread before their stores: a pull over NVLink is latency-bound otherwise (one
// 16-byte load per thread per round trip).  The fused kernel's comm warps live on 64 registers
// and take U = 2; the all-thread kernels take 4.
template <int U = 4> __device__ __forceinline__ void copy_slice(U4 *dst, const U4 *src, long n16, int tid, int nt) {
  const long per = (n16 + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = min(n16, lo + per);
  long i = lo + tid;
  for (; i + (U - 1) * (long)nt < hi; i += U * (long)nt) {
    U4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * (long)nt];
#pragma unroll
    for (int u = 0; u < U; ++u) dst[i + u * (long)nt] = v[u];
  }
  for (; i < hi; i += nt) dst[i] = src[i];
}

// publish: this block's slice of `a` into region[rank][h] (of every rank for multimem).
template <class T, int COMM, int U = 4>
__device__ __forceinline__ void publish_slice(const Comm &c, const T *a, int h, long shard_elems, int tid, int nt) {
  const long n16 = shard_elems * (long)sizeof(T) / 16;
  const long per = (n16 + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = min(n16, lo + per);
  const U4 *src = (const U4 *)a;
  if constexpr (COMM == COMM_MULTIMEM) {
    if (c.mc) {
      U4 *dst = (U4 *)region<T>(c, c.mc, h, c.rank, shard_elems);
      for (long i = lo + tid; i < hi; i += nt) multimem_st<T>(dst + i, src[i]);
      return;
    }
    for (long i = lo + tid; i < hi; i += nt) {   // the emulated twin: unicast to every rank
      const U4 v = src[i];
#pragma unroll
      for (int p = 0; p < MAX_RANKS; ++p)
        if (p < c.size) ((U4 *)region<T>(c, c.peers[p], h, c.rank, shard_elems))[i] = v;
    }
  } else {
    copy_slice<U>((U4 *)region<T>(c, c.peers[c.rank], h, c.rank, shard_elems), src, n16, tid, nt);
  }
}

// Pull: after READY from rank s, this block's slice of region s from rank s into its own
// region s, then PULLED(e) to itself.  Threads tid of nt, synchronised by sync(); returns 1
// if a wait stopped (then nothing more is moved).
template <class T, bool RING, int U, class Sync, class AnyStop>
__device__ __forceinline__ int pull_shards(const Comm &c, int h, long shard_elems, u64 e, int tid, int nt, Sync sync,
                                           AnyStop any_stop) {
  for (int j = 0; j < c.size - 1; ++j) {
    const int s = peer_at<RING>(c, j);
    if (any_stop(wait_blocks(c, SIG_READY, s, e, tid, nt))) return 1;
    copy_slice<U>((U4 *)region<T>(c, c.peers[c.rank], h, s, shard_elems), (const U4 *)region<T>(c, c.peers[s], h, s, shard_elems),
               shard_elems * (long)sizeof(T) / 16, tid, nt);
    sync();
    if (tid == 0) send_signal(c, SIG_PULLED, c.rank, s, e);
  }
  return 0;
}

}  // namespace weft
