// weft/row_softmax.cuh: numerically stable softmax of long rows split across a cluster
// (family row_softmax).  Each thread keeps an online pair (max m, sum of exp(x - m)); pairs
// combine across the block and then the cluster (cluster_allreduce, W = 2), so every CTA of a
// row uses the same bits for the row's max and sum.
//   onchip: the CTA's slice of the row stays in registers (PT vectors per thread): the row is
//           read once and written once.  cols <= CLUSTER * THREADS * PT * V.
//   stream: any length; the slice is read twice (the second read may hit L2) and written once.
//   tma:    the slice lives in shared memory, two stages: the bulk copy engine fetches the
//           cluster's next row while the threads work on this one.  cols <= CLUSTER * CHUNK * V.
#pragma once
#include "weft/types.cuh"
#include "weft/block.cuh"
#include "weft/cluster.cuh"
#include "weft/bulk.cuh"

namespace weft {

constexpr float LOG2E = 1.4426950408889634f;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
// x - m with m = -inf treated as 0, so a thread whose elements are all -inf gets exp() = 0.
__device__ __forceinline__ float shift_of(float m) { return m == neg_inf() ? 0.0f : m; }

// (max, sum) pairs: (m1, s1) + (m2, s2) = (m, s1 e^(m1-m) + s2 e^(m2-m)); identity (-inf, 0).
struct OnlineSoftmax {
  __device__ __forceinline__ static Vals<2> combine(const Vals<2> &a, const Vals<2> &b) {
    Vals<2> r;
    const float m = fmaxf(a.v[0], b.v[0]);
    const float sa = a.v[0] == m ? a.v[1] : a.v[1] * ex2((a.v[0] - m) * LOG2E);
    const float sb = b.v[0] == m ? b.v[1] : b.v[1] * ex2((b.v[0] - m) * LOG2E);
    r.v[0] = m;
    r.v[1] = sa + sb;
    return r;
  }
};

// The CTA's share of a row: vectors [vbeg, vend) plus, in the last CTA, the unaligned scalars.
template <class T, int CLUSTER> struct RowSlice {
  RowSplit<T> s;
  long vbeg, vend;
  bool scalar_owner;
  __device__ __forceinline__ RowSlice(const T *p, long cols, u32 rank) : s(p, cols) {
    const long chunk = (s.nvec + CLUSTER - 1) / CLUSTER;
    vbeg = (long)rank * chunk;
    vend = vbeg + chunk < s.nvec ? vbeg + chunk : s.nvec;
    scalar_owner = rank == CLUSTER - 1 && threadIdx.x < s.head + s.tail;
  }
};

// The row loop's k-th combine; the exchange alternates two slots and retires at exit.
template <int CLUSTER, int THREADS, bool PUSH>
__device__ __forceinline__ Vals<2> softmax_combine(float m, float sum, float *scratch,
                                                   typename Exchange<CLUSTER, 2, PUSH>::Slots &ex, u32 k) {
  Vals<2> v;
  v.v[0] = m;
  v.v[1] = sum;
  v = block_reduce<OnlineSoftmax, THREADS, 2>(v, scratch);
  return Exchange<CLUSTER, 2, PUSH>::template combine<OnlineSoftmax>(ex, k, v);
}

// Issue the loads of a row's slice (PT vectors per thread) into registers.
template <class T, int CLUSTER, int THREADS, int PT>
__device__ __forceinline__ void load_slice(U4 (&r)[PT], const T *x, long row, long cols, u32 rank) {
  const T *p = x + row * cols;
  const RowSlice<T, CLUSTER> sl(p, cols, rank);
  const U4 *vp = reinterpret_cast<const U4 *>(p + sl.s.head);
#pragma unroll
  for (int k = 0; k < PT; ++k) {
    const long j = sl.vbeg + threadIdx.x + (long)k * THREADS;
    if (j < sl.vend) r[k] = load_stream(vp + j);
  }
}

// One row whose slice is already in r.  With PREFETCH, the next row's loads are issued into
// `next` as soon as this row's local max and sum are known, so they are in flight during the
// block and cluster combine and the output pass.
template <class T, int CLUSTER, int THREADS, int PT, bool PREFETCH, bool PUSH>
__device__ __forceinline__ void row_softmax_onchip_row(T *y, const T *x, long row, long next_row, long rows,
                                                       long cols, u32 rank, float *scratch,
                                                       typename Exchange<CLUSTER, 2, PUSH>::Slots &ex, u32 k,
                                                       const U4 (&r)[PT], U4 (&next)[PT]) {
  constexpr int V = VecOf<T>::N;
  const T *p = x + row * cols;
  T *q = y + row * cols;
  const RowSlice<T, CLUSTER> sl(p, cols, rank);
  U4 *vq = reinterpret_cast<U4 *>(q + sl.s.head);

  float xs = neg_inf();
  if (sl.scalar_owner) xs = to_f32(p[sl.s.scalar_index(threadIdx.x)]);

  VecMax<T> vm(xs);
#pragma unroll
  for (int k = 0; k < PT; ++k)
    if (sl.vbeg + threadIdx.x + (long)k * THREADS < sl.vend) vm.add(r[k]);
  const float m = vm.result();
  const float ms = shift_of(m);
  float sum = sl.scalar_owner ? ex2((xs - ms) * LOG2E) : 0.0f;
#pragma unroll
  for (int k = 0; k < PT; ++k)
    if (sl.vbeg + threadIdx.x + (long)k * THREADS < sl.vend) {
#pragma unroll
      for (int e = 0; e < V; ++e) sum += ex2((lane_f32<T>(r[k], e) - ms) * LOG2E);
    }
  if constexpr (PREFETCH) {
    if (next_row < rows) load_slice<T, CLUSTER, THREADS, PT>(next, x, next_row, cols, rank);
  }

  const Vals<2> tot = softmax_combine<CLUSTER, THREADS, PUSH>(m, sum, scratch, ex, k);
  const float M = shift_of(tot.v[0]), inv = 1.0f / tot.v[1];
#pragma unroll
  for (int k = 0; k < PT; ++k) {
    const long j = sl.vbeg + threadIdx.x + (long)k * THREADS;
    if (j < sl.vend) {
      float f[V];
#pragma unroll
      for (int e = 0; e < V; ++e) f[e] = ex2((lane_f32<T>(r[k], e) - M) * LOG2E) * inv;
      store_stream(vq + j, pack_f32<T>(f));
    }
  }
  if (sl.scalar_owner) q[sl.s.scalar_index(threadIdx.x)] = from_f32<T>(ex2((xs - M) * LOG2E) * inv);
}

template <class T, int CLUSTER, int THREADS, int UNROLL, bool PUSH>
__device__ __forceinline__ void row_softmax_stream_row(T *y, const T *x, long row, long cols, u32 rank,
                                                       float *scratch, typename Exchange<CLUSTER, 2, PUSH>::Slots &ex,
                                                       u32 k) {
  constexpr int V = VecOf<T>::N;
  const T *p = x + row * cols;
  T *q = y + row * cols;
  const RowSlice<T, CLUSTER> sl(p, cols, rank);
  const U4 *vp = reinterpret_cast<const U4 *>(p + sl.s.head);
  U4 *vq = reinterpret_cast<U4 *>(q + sl.s.head);

  float xs = neg_inf();
  if (sl.scalar_owner) xs = to_f32(p[sl.s.scalar_index(threadIdx.x)]);
  float m = xs, sum = sl.scalar_owner ? ex2((xs - shift_of(xs)) * LOG2E) : 0.0f;
  for (long i = sl.vbeg + threadIdx.x; i < sl.vend; i += (long)THREADS * UNROLL) {
    U4 r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < sl.vend) r[u] = load_keep(vp + i + (long)u * THREADS);
    float bm = m;   // one rescale per batch, not per element
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < sl.vend) {
#pragma unroll
        for (int e = 0; e < V; ++e) bm = fmaxf(bm, lane_f32<T>(r[u], e));
      }
    const float bs = shift_of(bm);
    if (bm != m) sum = sum == 0.0f ? 0.0f : sum * ex2((m - bs) * LOG2E);
    m = bm;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < sl.vend) {
#pragma unroll
        for (int e = 0; e < V; ++e) sum += ex2((lane_f32<T>(r[u], e) - bs) * LOG2E);
      }
  }

  const Vals<2> tot = softmax_combine<CLUSTER, THREADS, PUSH>(m, sum, scratch, ex, k);
  const float M = shift_of(tot.v[0]), inv = 1.0f / tot.v[1];
  for (long i = sl.vbeg + threadIdx.x; i < sl.vend; i += (long)THREADS * UNROLL) {
    U4 r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < sl.vend) r[u] = load_stream(vp + i + (long)u * THREADS);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < sl.vend) {
        float f[V];
#pragma unroll
        for (int e = 0; e < V; ++e) f[e] = ex2((lane_f32<T>(r[u], e) - M) * LOG2E) * inv;
        store_stream(vq + i + (long)u * THREADS, pack_f32<T>(f));
      }
  }
  if (sl.scalar_owner) q[sl.s.scalar_index(threadIdx.x)] = from_f32<T>(ex2((xs - M) * LOG2E) * inv);
}

// The kernels: each cluster takes rows cluster_id, cluster_id + nclusters, ...; a grid with one
// cluster per row runs the loop once, a persistent grid (co-resident clusters) many times.
template <class T, int CLUSTER, int THREADS, int PT, bool PREFETCH, bool PUSH>
__device__ __forceinline__ void row_softmax_onchip(T *y, const T *x, long rows, long cols) {
  __shared__ float scratch[(THREADS / 32) * 2];
  __shared__ typename Exchange<CLUSTER, 2, PUSH>::Slots ex;
  Exchange<CLUSTER, 2, PUSH>::init(ex);
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  const long nclusters = gridDim.x / CLUSTER;
  const long first = blockIdx.x / CLUSTER;
  U4 cur[PT];
  if (first < rows) load_slice<T, CLUSTER, THREADS, PT>(cur, x, first, cols, rank);
  int it = 0;
  for (long row = first; row < rows; row += nclusters, ++it) {
    U4 next[PT];
    row_softmax_onchip_row<T, CLUSTER, THREADS, PT, PREFETCH, PUSH>(y, x, row, row + nclusters, rows, cols, rank,
                                                                     scratch, ex, (u32)it, cur, next);
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < PT; ++k) cur[k] = next[k];
    } else if (row + nclusters < rows) {
      load_slice<T, CLUSTER, THREADS, PT>(cur, x, row + nclusters, cols, rank);
    }
  }
  cluster_retire<CLUSTER>();
}

template <class T, int CLUSTER, int THREADS, int UNROLL, bool PREFETCH_UNUSED, bool PUSH>
__device__ __forceinline__ void row_softmax_stream(T *y, const T *x, long rows, long cols) {
  __shared__ float scratch[(THREADS / 32) * 2];
  __shared__ typename Exchange<CLUSTER, 2, PUSH>::Slots ex;
  Exchange<CLUSTER, 2, PUSH>::init(ex);
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  for_each_cluster_row<CLUSTER>(rows, [&](long row, u32 k) {
    row_softmax_stream_row<T, CLUSTER, THREADS, UNROLL, PUSH>(y, x, row, cols, rank, scratch, ex, k);
  });
}

// mode tma.  Stage s holds the slice of rows it = s, s+2, ...; its barrier completes once per
// use, so the wait parity for iteration it is (it / 2) & 1.  Before thread 0 refills a stage, a
// __syncthreads() at the top of the iteration guarantees every thread finished reading it.
template <class T, int CLUSTER, int THREADS, int CHUNK, bool PREFETCH_UNUSED, bool PUSH>
__device__ __forceinline__ void row_softmax_tma(T *y, const T *x, long rows, long cols) {
  constexpr int V = VecOf<T>::N;
  extern __shared__ __align__(128) U4 stage_buf[];   // [2][CHUNK]
  __shared__ __align__(8) u64 full[2];
  __shared__ float scratch[(THREADS / 32) * 2];
  __shared__ typename Exchange<CLUSTER, 2, PUSH>::Slots ex;
  Exchange<CLUSTER, 2, PUSH>::init(ex);
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  const long nclusters = gridDim.x / CLUSTER;
  const long first = blockIdx.x / CLUSTER;

  // thread 0: start the copy of `row`'s slice into stage s
  auto fetch = [&](long row, int s) {
    const T *p = x + row * cols;
    const RowSlice<T, CLUSTER> sl(p, cols, rank);
    const long n = sl.vend > sl.vbeg ? sl.vend - sl.vbeg : 0;
    mbar_arrive_expect(&full[s], (u32)(n * 16));
    if (n) bulk_load(stage_buf + s * CHUNK, reinterpret_cast<const U4 *>(p + sl.s.head) + sl.vbeg, (u32)(n * 16), &full[s]);
  };
  if (threadIdx.x == 0) {
    mbar_init(&full[0], 1);
    mbar_init(&full[1], 1);
    fence_barrier_init();
    if (first < rows) fetch(first, 0);
  }
  __syncthreads();

  int it = 0;
  for (long row = first; row < rows; row += nclusters, ++it) {
    const int s = it & 1;
    __syncthreads();   // everyone is done with stage s^1 (row it-1): it may be refilled
    if (threadIdx.x == 0 && row + nclusters < rows) fetch(row + nclusters, s ^ 1);

    const T *p = x + row * cols;
    T *q = y + row * cols;
    const RowSlice<T, CLUSTER> sl(p, cols, rank);
    const long n = sl.vend - sl.vbeg;
    float xs = neg_inf();
    if (sl.scalar_owner) xs = to_f32(p[sl.s.scalar_index(threadIdx.x)]);
    mbar_wait(&full[s], (u32)((it >> 1) & 1));
    const U4 *buf = stage_buf + s * CHUNK;

    VecMax<T> vm(xs);
    for (long j = threadIdx.x; j < n; j += THREADS) vm.add(lds128(buf + j));
    const float m = vm.result();
    const float ms = shift_of(m);
    float sum = sl.scalar_owner ? ex2((xs - ms) * LOG2E) : 0.0f;
    for (long j = threadIdx.x; j < n; j += THREADS) {
      const U4 v = lds128(buf + j);
#pragma unroll
      for (int e = 0; e < V; ++e) sum += ex2((lane_f32<T>(v, e) - ms) * LOG2E);
    }
    const Vals<2> tot = softmax_combine<CLUSTER, THREADS, PUSH>(m, sum, scratch, ex, (u32)it);
    const float M = shift_of(tot.v[0]), inv = 1.0f / tot.v[1];
    U4 *vq = reinterpret_cast<U4 *>(q + sl.s.head) + sl.vbeg;
    for (long j = threadIdx.x; j < n; j += THREADS) {
      const U4 v = lds128(buf + j);
      float f[V];
#pragma unroll
      for (int e = 0; e < V; ++e) f[e] = ex2((lane_f32<T>(v, e) - M) * LOG2E) * inv;
      store_stream(vq + j, pack_f32<T>(f));
    }
    if (sl.scalar_owner) q[sl.s.scalar_index(threadIdx.x)] = from_f32<T>(ex2((xs - M) * LOG2E) * inv);
  }
  cluster_retire<CLUSTER>();
}

}  // namespace weft
