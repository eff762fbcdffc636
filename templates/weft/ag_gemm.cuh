// weft/ag_gemm.cuh: all-gather + GEMM.  C[M,N] = A[M,K] . B where A is row-sharded over the P
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
#include "weft/gemm.cuh"
#include "weft/launch.cuh"
#include "weft/multimem.cuh"
#include "weft/signal.cuh"
#include "weft/types.cuh"

namespace weft {

enum { SIG_READY = 0, SIG_PULLED = 1 };
enum { COMM_THREADLOAD = 0, COMM_MULTIMEM = 1, COMM_TMA = 2, COMM_NONE = 3 };

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
__device__ __forceinline__ int wait_blocks(const Comm &c, int signal, int sender, u64 e, int lane, int nl) {
  int stop = 0;
  Timeout to;
  const int owes = signal == SIG_PULLED ? c.rank : sender;
  for (int b = lane; b < (int)gridDim.x && !stop; b += nl)
    poll_bounded<false>(c, signal_slot(c, c.peers[c.rank], signal, sender, b), owes, [e](u64 v) { return v >= e; },
                        [](u64 v) { return v; }, stop, to, signal == SIG_PULLED ? 2 : 1);
  to.report(c, signal, e);
  fence_acquire_sys();
  return stop;
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

template <int MR, int N> __device__ __forceinline__ void zero_acc(float (&acc)[MR][N]) {
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int q = 0; q < N; ++q) acc[mi][q] = 0.f;
}

// Split-K's hand-over of the CTA's i-th tile (the protocol: above ag_gemm_wgmma).  The NT
// consumer threads of each CTA call it with their accumulators.  The second CTA (crank 1) sends
// its partial sums and returns false (it stores nothing); the first adds them and returns true.
// red: NT x (MR * BN / 2) floats, thread ct's v-th quad at (v * NT + ct) * 4 (16-byte stores,
// no bank conflicts); red_bar: red_full (used in the first CTA), red_empty (in the second).
template <int MR, int BN, int NT>
__device__ __forceinline__ bool splitk_combine(float (&acc)[MR][BN / 2], float *red, u64 *red_bar, int crank, int i) {
  const int ct = threadIdx.x - 128;   // (consumers start at warpgroup 1)
  const u32 red0 = smem_addr(red) + 16u * (u32)ct;
  if (crank == 1) {
    if (i > 0) mbar_wait<true>(&red_bar[1], (u32)(i - 1) & 1);   // the first took the last partial
    const u32 dst = map_shared_rank(red0, 0);
#pragma unroll
    for (int mi = 0; mi < MR; ++mi)
#pragma unroll
      for (int q = 0; q < BN / 2; q += 4)
        st_shared_cluster_v4(dst + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT), acc[mi][q], acc[mi][q + 1], acc[mi][q + 2],
                             acc[mi][q + 3]);
    // every consumer's stores, then one release (cumulative: it carries what the barrier ordered)
    bar_sync(4, NT);
    if (ct == 0) mbar_release_cluster(&red_bar[0], 0);
    return false;
  }
  mbar_wait<true>(&red_bar[0], (u32)i & 1);
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int q = 0; q < BN / 2; q += 4) {
      const float4 v = lds_f4(red0 + 16u * (u32)((mi * (BN / 2) + q) / 4 * NT));
      acc[mi][q] += v.x; acc[mi][q + 1] += v.y; acc[mi][q + 2] += v.z; acc[mi][q + 3] += v.w;
    }
  bar_sync(4, NT);                                      // every consumer has read its part:
  if (ct == 0) mbar_arrive_remote(&red_bar[1], 1);      // the buffer may take the next partial
  return true;
}

// ---- the WGMMA kernel: plain GEMM (COMM_NONE) and the fused all-gather + GEMM ------------------
// Tiles are numbered shard by shard in schedule order (the rank's own shard first), rastered
// within a shard; CTA i takes tiles i, i + grid, ...  The producer waits for a shard once, the
// first time one of its tiles comes up; the local shard needs no wait (it is `a`, via ta).
// Peer shards come through tsh: comm.shards (every rank's region s, read over NVLink by TMA)
// for COMM_TMA, comm.local (this rank's own regions) for COMM_THREADLOAD and COMM_MULTIMEM.
//
// PINGPONG (2 consumers): each consumer warpgroup owns whole tiles, alternating (this CTA's
// tiles 0, 2, 4, ... to the first, 1, 3, ... to the second), so one warpgroup's epilogue runs
// while the other's WGMMAs keep the tensor cores busy; it walks the ring past the other's
// stages.  Their main loops take turns (named barriers 2 and 3): tile i's main loop starts
// after tile i-1's was issued, so no reader is ever more than a ring ahead of the producer (a
// parity wait could otherwise see an older phase of the same stage).  Otherwise
// (cooperative) both split every tile by rows.
//
// Clusters (CM x CN CTAs, CM * CN <= 2): a cluster takes CM x CN neighbouring tiles at once --
// CM row blocks sharing one column block of B, or CN column blocks sharing one row block of A.
// The shared operand is loaded once per cluster: each CTA loads its part and multicasts it to
// every CTA, so each full[s] still receives a whole stage (its expect_tx is unchanged) from
// several copies.  A stage may be refilled only when the consumers of every CTA are done with
// it (one of them writes into the others' shared memory): each consumer warp arrives on
// empty[s] of every CTA of the cluster.  The CTAs of a cluster walk the same tiles in the same
// order; a tile past the matrix edge still loads and multiplies (TMA fills zeros) so that its
// partner's stages complete, and stores nothing.  The cluster synchronises once the barriers
// exist (before any CTA writes into another) and again before exit (no CTA leaves while a
// partner may still arrive on its barriers).
//
// SPLITK = 2 (a cluster of two along K, cooperative consumers): both CTAs of a cluster compute
// the same tile, the first over the first half of the k-blocks, the second over the rest.  The
// second writes its f32 partial sums into the first's shared memory (st.shared::cluster, each
// thread its own fragment, 16 bytes at a time); after a named barrier over its consumers one
// thread arrives on the first's red_full (release, cluster scope).  The first waits (acquire,
// cluster scope), adds them in -- always in the same order, so the result is deterministic --
// and after its own named barrier one thread arrives on the second's red_empty (the buffer may
// be rewritten); then it stores the tile.  Each CTA keeps its own ring; no stage is shared.
//
// PDL (variant gemm only): the kernel may be launched before the previous one in its stream has
// finished; it waits (griddepcontrol.wait) after setting up its shared memory.
//
// A producer that timed out waiting for a shard stops waiting but goes on loading (stale data):
// the pipeline and the cluster's byte counts stay whole, and the kernel ends with the error
// already reported.
//
// EPI_TMA: the epilogue stages C in shared memory (after the split-K area, 1024-byte aligned,
// one ROWS x BN stage per consumer warpgroup) and stores it with TMA through tc; otherwise the
// accumulators go straight to global memory (store_tile).
template <class T, int BM, int BN, int STAGES, int CONSUMERS, bool PINGPONG, int CM, int CN, int SPLITK, bool EPI_TMA,
          bool B_ROW, int GROUP, int COMM, bool RING, bool PDL, class WG>
__device__ __forceinline__ void ag_gemm_wgmma(T *c, const T *a, long m, long n, long k, const TensorMap &ta,
                                              const TensorMap &tb, const TensorMap *tsh, const TensorMap *tc,
                                              const Comm *cm) {
  static_assert(!PINGPONG || CONSUMERS == 2, "pingpong alternates two consumer warpgroups");
  static_assert(CM * CN * SPLITK <= 2, "clusters of at most two CTAs");
  static_assert(SPLITK == 1 || !PINGPONG, "split-K reduces cooperative tiles");
  constexpr int CS = CM * CN * SPLITK;                              // CTAs per cluster
  constexpr int SHARE = CM * CN;                                    // CTAs reading each stage
  constexpr int MR = PINGPONG ? BM / 64 : BM / (64 * CONSUMERS);   // 64-row WGMMA groups per consumer
  constexpr int STAGE_WARPS = PINGPONG ? 4 : CONSUMERS * 4;         // consumer warps that read a stage
  // 384 threads were given 168 registers each at launch (64512).  Where a consumer holds more
  // than 64 accumulators, the loading warpgroup gives most of its share to them (its comm warps
  // need a little more than TMA issue alone); smaller tiles keep the even split.  The shifted
  // counts must add up to no more than the launch allocation, 128 * P + 256 * C <= 64512:
  // setmaxnreg.inc waits for registers that were never allocated, forever.
  constexpr bool SHIFT_REGS = CONSUMERS > 1 && MR * BN / 2 > 64;
  constexpr int PRODUCER_REGS = COMM == COMM_NONE ? 40 : 64, CONSUMER_REGS = COMM == COMM_NONE ? 232 : 216;
  static_assert(128 * PRODUCER_REGS + 256 * CONSUMER_REGS <= 64512, "more registers than the launch allocated");
  using R = Ring<BM, BN, STAGES>;
  extern __shared__ char smem_raw[];
  R ring;
  ring.carve(smem_raw);
  u64 e = 0;
  int P = 1, rank = 0, h = 0;
  if constexpr (COMM != COMM_NONE) {
    e = launch_epoch(*cm);
    P = cm->size;
    rank = cm->rank;
    h = (int)(e & 1);
  }
  const int crank = CS > 1 ? (int)cluster_ctarank() : 0;          // this CTA within its cluster
  const int cid = (int)blockIdx.x / CS, clusters = (int)gridDim.x / CS;
  const long ms = m / P;
  const int mt = (int)((ms + BM - 1) / BM), nt = (int)((n + BN - 1) / BN);
  const int mu = (mt + CM - 1) / CM, nu = (nt + CN - 1) / CN;     // cluster units per shard
  const int per_shard = mu * nu, units = per_shard * P, kblocks = (int)((k + GEMM_BK - 1) / GEMM_BK);
  const int wg = threadIdx.x / 128;
  // split-K: this CTA's k-blocks [kb0, kb1); the partial-sum buffer and its two barriers sit
  // after the ring's barriers (16-byte aligned)
  const int kb0 = SPLITK > 1 && crank ? (kblocks + 1) / 2 : 0, kb1 = SPLITK > 1 && !crank ? (kblocks + 1) / 2 : kblocks;
  u64 *red_bar = ring.empty + STAGES;
  float *red = (float *)(red_bar + 2);
  char *epi = (char *)((((unsigned long long)(red + (SPLITK > 1 ? BM * BN : 0))) + 1023) & ~1023ull);
  // unit u -> its shard (the j-th in schedule order) and this CTA's row and column block in it;
  // producer and consumers (and the CTAs of a cluster) walk the same sequence
  auto tile_at = [&](int u, int &s, int &bm, int &bn) {
    const int j = COMM == COMM_NONE ? 0 : (int)((unsigned)u / (unsigned)per_shard);   // (one shard: no division)
    s = 0;
    if constexpr (COMM != COMM_NONE) s = shard_at<RING>(*cm, j);
    raster(u - j * per_shard, mu, nu, GROUP, bm, bn);
    bm = bm * CM + (CM > 1 ? crank : 0);
    bn = bn * CN + (CN > 1 ? crank : 0);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&ring.full[s], 1);
      mbar_init(&ring.empty[s], STAGE_WARPS * SHARE);   // one arrival per reading warp of each CTA
    }
    if constexpr (SPLITK > 1) {
      mbar_init(&red_bar[0], 1);   // red_full (used in the first CTA): one arrival for the second's consumers
      mbar_init(&red_bar[1], 1);   // red_empty (in the second): one for the first's consumers
    }
    fence_barrier_init();
  }
  if constexpr (CS > 1) cluster_sync();
  else __syncthreads();
  if constexpr (PDL) {
    // launched early (programmatic dependent launch): the barriers above are this CTA's own; A,
    // B and C are touched only after the kernel before this one is done.  Every thread waits,
    // so no store of C can overtake it either.  Then the next kernel may be scheduled: its CTAs
    // take SMs as this grid's leave and wait the same way.
    griddep_wait();
    griddep_launch_dependents();
  }

  if (wg == 0) {
    if constexpr (SHIFT_REGS) regs_dec<PRODUCER_REGS>();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {   // ---- producer
      if (lane == 0) {
        prefetch_tmap(ta);
        prefetch_tmap(tb);
        if (tsh) prefetch_tmap(*tsh);
      }
      Pipe<STAGES> p;
      u32 arrived = 1u << rank;
      int stop = 0;
      constexpr u16 ALL = (u16)((1u << SHARE) - 1);
      constexpr int AROWS = BM / CN;    // rows of A this CTA loads (CN > 1: its part, multicast)
      for (int u = cid; u < units; u += clusters) {
        int s, bm, bn;
        tile_at(u, s, bm, bn);
        if constexpr (COMM != COMM_NONE) {
          if (!stop && !((arrived >> s) & 1)) {
            // threadload: this rank's blocks pulled shard s; otherwise rank s published it
            const int w = COMM == COMM_THREADLOAD ? wait_blocks(*cm, SIG_PULLED, s, e, lane, 32)
                                                  : wait_blocks(*cm, SIG_READY, s, e, lane, 32);
            stop = __any_sync(~0u, w);
            fence_proxy_async_global();
            arrived |= 1u << s;
          }
        }
        if (lane == 0) {
          const int a_off = CN > 1 ? crank * AROWS : 0;
          for (int kb = kb0; kb < kb1; ++kb) {
            mbar_wait(&ring.empty[p.s], p.phase ^ 1);
            u64 *full = &ring.full[p.s];
            mbar_arrive_expect(full, R::STAGE_BYTES);
            char *adst = ring.a(p.s) + a_off * 128;
            const int arow = bm * BM + a_off;
            if constexpr (CN > 1) {
              if (s == rank) tma_load_2d_mc(adst, ta, kb * GEMM_BK, arow, full, ALL);
              else tma_load_4d_mc(adst, *tsh, kb * GEMM_BK, arow, s, h, full, ALL);
            } else {
              if (s == rank) tma_load_2d(adst, ta, kb * GEMM_BK, arow, full);
              else tma_load_4d(adst, *tsh, kb * GEMM_BK, arow, s, h, full);
            }
            load_b<BN, B_ROW, CM>(ring.b(p.s), tb, kb, bn * BN, full, crank);
            p.next();
          }
        }
        __syncwarp();
      }
    } else if constexpr (COMM != COMM_NONE) {   // ---- comm warps 1-3: publish, then pull
      if (P > 1) {
        const int tid = threadIdx.x - 32;
        const long se = ms * k;
        publish_slice<T, COMM, 2>(*cm, a, h, se, tid, 96);
        bar_sync(1, 96);
        if (tid < P) send_signal(*cm, SIG_READY, tid, rank, e);
        if constexpr (COMM == COMM_THREADLOAD)
          pull_shards<T, RING, 2>(*cm, h, se, e, tid, 96, [] { bar_sync(1, 96); }, [](int v) { return bar_or(1, 96, v); });
      }
    }
  } else {   // ---- consumers
    if constexpr (SHIFT_REGS) regs_inc<CONSUMER_REGS>();
    const int cw = wg - 1, lane = threadIdx.x % 32;
    // this warp is done with stage st (its wgmma.wait_group is warp-wide): one arrival in every
    // CTA that shares the stage (lane c tells CTA c)
    auto release = [&](int st) {
      if constexpr (SHARE > 1) {
        if (lane < SHARE) mbar_arrive_remote(&ring.empty[st], (u32)lane);
      } else {
        if (lane == 0) mbar_arrive(&ring.empty[st]);
      }
    };
    float acc[MR][BN / 2];
    zero_acc(acc);
    Pipe<STAGES> p;
    const int step = PINGPONG ? 2 : 1;                  // this warpgroup's share of the CTA's tiles
    if (PINGPONG && cw == 1) p.skip(kblocks);           // the first tile's stages are the other's
    const int mine = units > cid ? (units - cid + clusters - 1) / clusters : 0;
    for (int i = PINGPONG ? cw : 0; i < mine; i += step) {   // i: the CTA's i-th tile
      int s, bm, bn;
      tile_at(cid + i * clusters, s, bm, bn);
      if (PINGPONG && i > 0) bar_sync(2 + cw, 256);   // the other's main loop of tile i-1 was issued
      int prev = -1;
      for (int kb = kb0; kb < kb1; ++kb) {
        mbar_wait(&ring.full[p.s], p.phase);
        wgmma_fence();   // every k-block: with it only before a tile's first, ptxas serialised
                         // the WGMMAs (C7520): 1.1-1.3x slower (bench/RESULTS.md)
        consume_kblock<BM, BN, MR, B_ROW, WG>(acc, smem_addr(ring.a(p.s)), smem_addr(ring.b(p.s)),
                                               PINGPONG ? 0 : cw * MR * 64, kb == kb0);
        wgmma_commit();
        wgmma_wait<1>();   // the previous k-block's WGMMAs are done: its stage may be refilled
        if (kb > kb0) release(prev);
        prev = p.s;
        p.next();
      }
      if (PINGPONG && i + 1 < mine) bar_arrive(2 + (1 - cw), 256);   // tile i+1's main loop may start
      wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < MR; ++mi)
#pragma unroll
        for (int q = 0; q < BN / 2; ++q) fence_reg(acc[mi][q]);
      if (prev >= 0) release(prev);
      if (PINGPONG) p.skip(kblocks);                    // the other warpgroup's next tile
      if constexpr (SPLITK > 1) {
        if (kb0 == kb1) zero_acc(acc);   // (k = one k-block: the second half is empty)
        if (!splitk_combine<MR, BN, CONSUMERS * 128>(acc, red, red_bar, crank, i)) continue;   // the first CTA stores
      }
      const long r0 = (long)bm * BM + (PINGPONG ? 0 : cw * MR * 64);
      if constexpr (EPI_TMA) {
        if (r0 < ms && (long)bn * BN < n)   // (a cluster partner's tile past the edge stores nothing)
          store_tile_tma<T, BN, MR, COMM != COMM_NONE>(*tc, epi + cw * (MR * 64 * BN * (int)sizeof(T)), 5 + cw, (int)r0, s,
                                                       bn * BN, acc);
      } else {
        store_tile<T, BN, MR>(c, n, s * ms + r0, ms - r0, (long)bn * BN, acc);
      }
    }
    if constexpr (EPI_TMA) {
      // the last stores have read their stage before the CTA (and its shared memory) goes; the
      // writes themselves complete before the grid does
      if (threadIdx.x % 128 == 0) bulk_wait_read();
    }
  }
  if constexpr (COMM != COMM_NONE) launch_retire(*cm, e);
  if constexpr (CS > 1) cluster_sync();
}

// ---- the seed's scalar kernels (256 threads, a 16 x 16 grid of threads per output tile) -------
enum { SCALAR_NAIVE = 0, SCALAR_GATHERED = 1 };

template <class T, bool B_ROW> __device__ __forceinline__ float b_at(const T *b, long n, long k, long kk, long col) {
  return to_f32(B_ROW ? b[kk * n + col] : b[col * k + kk]);
}

// naive_remote: each thread computes its (BM/16) x (BN/16) outputs from A where it lies
// (rank s's region, over NVLink) and B in global memory: no staging, no reuse.
template <class T, int BM, int BN, bool B_ROW>
__device__ __forceinline__ void tile_naive(T *c, const T *as, const T *b, long n, long k, long rows, long row0, long col0,
                                           long crow0) {
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (int i = 0; i < BM / 16; ++i) {
    const long r = row0 + ty + 16 * i;
    if (r >= rows) continue;
    for (int jj = 0; jj < BN / 16; ++jj) {
      const long col = col0 + tx + 16 * jj;
      if (col >= n) continue;
      float acc = 0.f;
      for (long kk = 0; kk < k; ++kk) acc += to_f32(as[r * k + kk]) * b_at<T, B_ROW>(b, n, k, kk, col);
      c[(crow0 + r) * n + col] = from_f32<T>(acc);
    }
  }
}

// gathered: A is local (this rank's regions or `a`); tiles of A and B staged in shared memory.
template <class T, int BM, int BN, int BK, bool B_ROW>
__device__ __forceinline__ void tile_staged(T *c, const T *as, const T *b, long n, long k, long rows, long row0, long col0,
                                            long crow0) {
  __shared__ float sa[BK][BM + 1], sb[BK][BN + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[BM / 16][BN / 16] = {};
  for (long k0 = 0; k0 < k; k0 += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += 256) {
      const int r = i / BK, kk = i % BK;
      const long gr = row0 + r, gk = k0 + kk;
      sa[kk][r] = gr < rows && gk < k ? to_f32(as[gr * k + gk]) : 0.f;
    }
    for (int i = threadIdx.x; i < BN * BK; i += 256) {
      const int cc = B_ROW ? i % BN : i / BK, kk = B_ROW ? i / BN : i % BK;
      const long gc = col0 + cc, gk = k0 + kk;
      sb[kk][cc] = gc < n && gk < k ? b_at<T, B_ROW>(b, n, k, gk, gc) : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < BK; ++kk)
#pragma unroll
      for (int i = 0; i < BM / 16; ++i)
#pragma unroll
        for (int jj = 0; jj < BN / 16; ++jj) acc[i][jj] += sa[kk][ty + 16 * i] * sb[kk][tx + 16 * jj];
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < BM / 16; ++i)
#pragma unroll
    for (int jj = 0; jj < BN / 16; ++jj) {
      const long r = row0 + ty + 16 * i, col = col0 + tx + 16 * jj;
      if (r < rows && col < n) c[(crow0 + r) * n + col] = from_f32<T>(acc[i][jj]);
    }
}

// naive_remote (threadload, SCALAR_NAIVE), threadload_gather (threadload, SCALAR_GATHERED: pull
// every shard first) and multimem_gather (multimem, SCALAR_GATHERED).
template <class T, int BM, int BN, int BK, int COMM, int KIND, bool B_ROW, bool RING>
__device__ __forceinline__ void ag_gemm_scalar(T *c, const T *a, const T *b, long m, long n, long k, const Comm &cm) {
  const u64 e = launch_epoch(cm);
  const int P = cm.size, rank = cm.rank, h = (int)(e & 1), tid = threadIdx.x;
  const long ms = m / P, se = ms * k;
  int stop = 0;
  if (P > 1) {
    publish_slice<T, COMM>(cm, a, h, se, tid, 256);
    __syncthreads();
    if (tid < P) send_signal(cm, SIG_READY, tid, rank, e);
    if constexpr (KIND == SCALAR_GATHERED && COMM == COMM_THREADLOAD)
      stop = pull_shards<T, RING, 4>(cm, h, se, e, tid, 256, [] { __syncthreads(); }, [](int v) { return __syncthreads_or(v); });
  }
  const int mt = (int)((ms + BM - 1) / BM), nt = (int)((n + BN - 1) / BN), per_shard = mt * nt;
  u32 arrived = 1u << rank;
  for (int t = blockIdx.x; t < per_shard * P && !stop; t += gridDim.x) {
    const int j = t / per_shard, s = shard_at<RING>(cm, j);
    const int bm = (t - j * per_shard) / nt, bn = (t - j * per_shard) % nt;
    if (!((arrived >> s) & 1)) {
      const bool pulled = KIND == SCALAR_GATHERED && COMM == COMM_THREADLOAD;
      stop = __syncthreads_or(pulled ? wait_blocks(cm, SIG_PULLED, s, e, tid, 256) : wait_blocks(cm, SIG_READY, s, e, tid, 256));
      if (stop) break;
      arrived |= 1u << s;
    }
    const T *as = s == rank ? a : region<T>(cm, cm.peers[KIND == SCALAR_NAIVE ? s : rank], h, s, se);
    if constexpr (KIND == SCALAR_NAIVE) tile_naive<T, BM, BN, B_ROW>(c, as, b, n, k, ms, (long)bm * BM, (long)bn * BN, s * ms);
    else tile_staged<T, BM, BN, BK, B_ROW>(c, as, b, n, k, ms, (long)bm * BM, (long)bn * BN, s * ms);
  }
  launch_retire(cm, e);
}

// ---- gather_then_gemm's first kernel: the full A into ag (M x K), then weft's GEMM kernel ------
template <class T, int COMM, bool RING> __device__ __forceinline__ void ag_gather(T *ag, const T *a, long m, long k, const Comm &cm) {
  const u64 e = launch_epoch(cm);
  const int P = cm.size, rank = cm.rank, h = (int)(e & 1), tid = threadIdx.x;
  const long ms = m / P, se = ms * k, n16 = se * (long)sizeof(T) / 16;
  if (P > 1) publish_slice<T, COMM>(cm, a, h, se, tid, 256);
  copy_slice((U4 *)(ag + rank * se), (const U4 *)a, n16, tid, 256);
  if (P > 1) {
    __syncthreads();
    if (tid < P) send_signal(cm, SIG_READY, tid, rank, e);
    for (int j = 0; j < P - 1; ++j) {
      const int s = peer_at<RING>(cm, j);
      if (__syncthreads_or(wait_blocks(cm, SIG_READY, s, e, tid, 256))) break;
      // threadload reads rank s's region; multimem finds it already in its own
      const T *src = region<T>(cm, cm.peers[COMM == COMM_MULTIMEM ? rank : s], h, s, se);
      copy_slice((U4 *)(ag + s * se), (const U4 *)src, n16, tid, 256);
    }
  }
  launch_retire(cm, e);
}

}  // namespace weft
