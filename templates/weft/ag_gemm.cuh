// weft/ag_gemm.cuh: all-gather + GEMM.  C[M,N] = A[M,K] . B where A is row-sharded over the P
// ranks (rank r owns rows r*Ms .. (r+1)*Ms - 1, Ms = M / P, given as `a`) and every rank
// computes all of C.  The protocol (publish, READY / PULLED, waits, reuse) is
// weft/ag_protocol.cuh's; this file has the kernels that use it:
//   ag_gemm_wgmma   the fused kernel: weft/gemm_kernel.cuh's persistent GEMM with a source
//                   (AgShards) whose shards arrive from the ranks while it computes;
//   ag_gemm_scalar  the seed's scalar kernels (naive_remote, threadload_gather, multimem_gather);
//   ag_gather       gather_then_gemm's first kernel (its second is family gemm's).
#pragma once
#include "weft/ag_protocol.cuh"
#include "weft/gemm_kernel.cuh"
#include "weft/launch.cuh"
#include "weft/types.cuh"

namespace weft {

// ---- the fused kernel's source of A ---------------------------------------------------------
// Tiles are numbered shard by shard in schedule order (the rank's own shard first), rastered
// within a shard.  The producer waits for a shard once, the first time one of its tiles comes
// up; the local shard needs no wait (it is `a`, via ta).  Peer shards come through tsh:
// comm.shards (every rank's region s, read over NVLink by TMA) for COMM_TMA, comm.local (this
// rank's own regions) for COMM_THREADLOAD and COMM_MULTIMEM.  Warps 1-3 of the producer's
// warpgroup publish this rank's shard, then (threadload) pull the others'.
// A producer that timed out waiting for a shard stops waiting but goes on loading (stale data):
// the pipeline and the cluster's byte counts stay whole, and the kernel ends with the error
// already reported.
template <class Cfg> struct AgShards {
  static constexpr bool SHARDED = true, STORES = false;
  // the comm warps live on 64 registers (copy_slice<2>'s loads in flight); the consumers keep
  // what is left of the launch's 64512
  static constexpr int PRODUCER_REGS = 64, CONSUMER_REGS = 216;
  using T = typename Cfg::T;
  const Comm &cm;
  const TensorMap &tsh;
  const T *a;
  long m, k;
  u64 e;
  int P, rank, h;
  u32 arrived;   // (producer) the shards it has waited for
  int stop;      // (producer) a wait timed out: stop waiting
  __device__ __forceinline__ AgShards(const Comm &cm_, const TensorMap &tsh_, const T *a_, long m_, long k_)
      : cm(cm_), tsh(tsh_), a(a_), m(m_), k(k_) {
    P = cm.size;
    rank = cm.rank;
    // (one rank: no peer shard, no signal, no half of a region; launch_epoch's load and block
    // barrier would only delay the producer's first load, so the epoch is read at retire)
    e = P > 1 ? launch_epoch(cm) : 0;
    h = (int)(e & 1);
    arrived = 1u << rank;
    stop = 0;
  }
  __device__ __forceinline__ int shards() const { return P; }
  __device__ __forceinline__ int shard(int j) const { return shard_at<Cfg::RING>(cm, j); }
  __device__ __forceinline__ void prefetch() const { prefetch_tmap(tsh); }
  __device__ __forceinline__ void producer_wait(int s, int lane) {
    if (!stop && !((arrived >> s) & 1)) {
      // threadload: this rank's blocks pulled shard s; otherwise rank s published it
      const int w = Cfg::COMM == COMM_THREADLOAD ? wait_blocks(cm, SIG_PULLED, s, e, lane, 32)
                                                 : wait_blocks(cm, SIG_READY, s, e, lane, 32);
      stop = __any_sync(~0u, w);
      fence_proxy_async_global();
      arrived |= 1u << s;
    }
  }
  template <bool MC>
  __device__ __forceinline__ void load_a(char *dst, const TensorMap &ta, int k0, int row, int s, u64 *full, u16 mask) const {
    if constexpr (MC) {
      if (s == rank) tma_load_2d_mc(dst, ta, k0, row, full, mask);
      else tma_load_4d_mc(dst, tsh, k0, row, s, h, full, mask);
    } else {
      if (s == rank) tma_load_2d(dst, ta, k0, row, full);
      else tma_load_4d(dst, tsh, k0, row, s, h, full);
    }
  }
  template <class Walk> __device__ __forceinline__ void comm_warps(const Walk &, T *, long) {
    if (P > 1) {
      const int tid = threadIdx.x - 32;
      const long se = m / P * k;
      publish_slice<T, Cfg::COMM, 2>(cm, a, h, se, tid, 96);
      bar_sync(BAR_COMM, 96);
      if (tid < P) send_signal(cm, SIG_READY, tid, rank, e);
      if constexpr (Cfg::COMM == COMM_THREADLOAD)
        pull_shards<T, Cfg::RING, 2>(cm, h, se, e, tid, 96, [] { bar_sync(BAR_COMM, 96); },
                                     [](int v) { return bar_or(BAR_COMM, 96, v); });
    }
  }
  __device__ __forceinline__ void retire() {
    if (P > 1) launch_retire(cm, e);
    else launch_retire_unread(cm);
  }
};

// The fused kernel's body (templates/ag_gemm.cu, variant fused).  Cfg adds COMM and RING to
// the GEMM's constants; tc is C's 3-d TMA map with EPI_TMA, else nullptr.
template <class Cfg>
__device__ __forceinline__ void ag_gemm_wgmma(typename Cfg::T *c, const typename Cfg::T *a, long m, long n, long k,
                                              const TensorMap &ta, const TensorMap &tb, const TensorMap &tsh,
                                              const TensorMap *tc, const Comm &cm) {
  static_assert(!Cfg::PDL, "the fused kernel waits for its ranks' signals, not for the kernel before it");
  AgShards<Cfg> src(cm, tsh, a, m, k);
  gemm_persistent<Cfg>(c, m, n, k, ta, tb, tc, src);
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
