// weft/row_reduce.cuh: reduce each row of x[rows][cols] to one f32 (family row_reduce).
// One row per cluster: the row's 16-byte vectors are split into CLUSTER contiguous chunks, one
// per CTA; each CTA reduces its chunk (UNROLL loads in flight per thread), then the block, then
// the cluster through cluster_allreduce, so the result is bit-identical in every CTA.
#pragma once
#include "weft/types.cuh"
#include "weft/block.cuh"
#include "weft/cluster.cuh"

namespace weft {

template <class T, class Op, int CLUSTER, int THREADS, int UNROLL, bool PUSH>
__device__ __forceinline__ void row_reduce_row(float *__restrict__ out, const T *__restrict__ x, long row,
                                               long cols, u32 rank, float *scratch,
                                               typename Exchange<CLUSTER, 1, PUSH>::Slots &ex, u32 k) {
  using C = Elementwise<Op>;
  constexpr int V = VecOf<T>::N;
  const T *p = x + row * cols;
  const RowSplit<T> s(p, cols);
  const U4 *vp = reinterpret_cast<const U4 *>(p + s.head);
  const long chunk = (s.nvec + CLUSTER - 1) / CLUSTER;
  const long vbeg = (long)rank * chunk;
  const long vend = vbeg + chunk < s.nvec ? vbeg + chunk : s.nvec;

  float acc = Op::identity();
  for (long i = vbeg + threadIdx.x; i < vend; i += (long)THREADS * UNROLL) {
    U4 r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < vend) r[u] = load_stream(vp + i + (long)u * THREADS);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (i + (long)u * THREADS < vend) {
#pragma unroll
        for (int e = 0; e < V; ++e) acc = Op::combine(acc, lane_f32<T>(r[u], e));
      }
  }
  // The few unaligned elements at the ends of the row: the last CTA has the shortest chunk.
  if (rank == CLUSTER - 1 && threadIdx.x < s.head + s.tail)
    acc = Op::combine(acc, to_f32(p[s.scalar_index(threadIdx.x)]));

  Vals<1> v;
  v.v[0] = acc;
  v = block_reduce<C, THREADS, 1>(v, scratch);
  // No tail sync: the row loop alternates two slots, and retires them before exit.
  const Vals<1> r = Exchange<CLUSTER, 1, PUSH>::template combine<C>(ex, k, v);
  if (rank == 0 && threadIdx.x == 0) out[row] = r.v[0];
}

template <class T, class Op, int CLUSTER, int THREADS, int UNROLL, bool PUSH>
__device__ __forceinline__ void row_reduce(float *__restrict__ out, const T *__restrict__ x, long rows, long cols) {
  __shared__ float scratch[THREADS / 32];
  __shared__ typename Exchange<CLUSTER, 1, PUSH>::Slots ex;
  Exchange<CLUSTER, 1, PUSH>::init(ex);
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  for_each_cluster_row<CLUSTER>(rows, [&](long row, u32 k) {
    row_reduce_row<T, Op, CLUSTER, THREADS, UNROLL, PUSH>(out, x, row, cols, rank, scratch, ex, k);
  });
}

}  // namespace weft
