// weft/collectives.cuh: reduce_scatter and all_gather on their own -- the allreduce's two
// phases (weft/allreduce.cuh) as collectives, with NCCL's semantics, and the pieces a fused
// GEMM + reduce-scatter reuses (rs_stage, rs_reduce_vec, rs_fold).
//
// P ranks, this one r; n elements per chunk; V elements per 16-byte vector, nvec = ceil(n / V).
// S_p[h] is rank p's symmetric data half h = e % 2 at epoch e.  Inside a half, chunk q starts at
// vector q * nvec: every chunk starts on a vector, whatever n is, so that vector j of chunk q is
// the same elements (q*n + j*V ..) in x, in S and in y, and the tail vector of a chunk is padded
// (its lanes past n are zero and never stored).
//
// reduce_scatter: x has P*n elements; y (n) = op over p of x_p[r*n .. r*n+n), folded in rank
// order 0..P-1 in f32 and rounded once.
//   1. S_r[h][chunk q] = x[q*n ..] for every q              (local: P*n elements per half)
//      signal READY(e) to every rank, wait READY(e) from every rank
//   2. y = fold over p of S_p[h][chunk r]                   (threadload: P remote reads per
//        vector, rank order; multimem: one multimem.ld_reduce of chunk r on the multicast
//        address, the emulated twin being that fold; a real ld_reduce reduces in the switch's
//        own order, so the run-to-run bit identity is the threadload path's and the twin's)
//   Staging is pull, not push (rank p writing its chunk q into rank q's slot p): the same P*n
//   elements per half either way, but pull keeps every rank's copy of chunk q at the same offset,
//   which is what multimem.ld_reduce reads (one address, every rank's memory), and its fold is
//   fold_ranks, the allreduce's own.  A push layout (the fold reading local slots) is what a fused
//   GEMM that pushes finished tiles to their owner would use; its fold is rs_fold over slots.
//
// all_gather: x has n elements; y (P*n): y[p*n + i] = x_p[i], the same bits on every rank.
//   threadload: 1. S_r[h][chunk 0] = x (local: n elements per half); READY(e) round
//               2. y[chunk q] = S_q[h][chunk 0] for every q (remote reads, from q = r upwards,
//                  so that the ranks do not all read rank 0 first)
//   multimem:   1. S_p[h][chunk r] = x for every p: one multimem.st to the multicast address,
//                  or (the emulated twin) a unicast store into every rank's half; READY(e)
//               2. y[chunk q] = S_r[h][chunk q] (local reads)             (P*n elements per half)
//
// Pairing, as in allreduce.cuh: block b of every rank handles the same vectors j of every chunk
// (the same first and step, the grid being the same on every rank), so block b waits only for
// block b of the other ranks, and what it reads after READY was written by the block that
// signalled it.  The runtime keeps the grid co-resident across the ranks sharing a GPU.
//
// Reuse: S_p[h] is rewritten at epoch e + 2 (reduce_scatter and threadload all_gather: by p
// itself; multimem all_gather: by every rank, into its own chunk).  A rank gets to launch e + 2
// only after launch e + 1 saw READY(e + 1) from every rank, which each sent after its launch e
// (the one that read S[h]) had finished, in stream order.  The double buffer makes READY the
// acknowledgement: one signal round per launch, no done phase of its own.
//
// In place (NCCL's convention): reduce_scatter with y = x + r*n and all_gather with x = y + r*n
// both work: a block writes only y vectors it has itself staged (or whose bits it rewrites with
// the same bits), after its READY wait.  Any element alignment is taken: a chunk whose base is
// not 16-byte aligned (odd n) moves element by element on the x / y side; S is always aligned.
//
// PDL: as allreduce.cuh (wait for the previous grid before the epoch or any buffer, then let the
// next one be scheduled; the runtime halves the grid cap of pdl comm kernels once more).
//
// NP (the config's `ranks`; 0: any): the world size the kernel is generated for, so that the
// loops over ranks and the fold's loads are that many (the runtime refuses another world size).
// Copies keep four 16-byte loads in flight per thread (strided_copy): a pull is latency-bound,
// and with one load per iteration the stores' possible aliasing kept the compiler from
// overlapping two.
#pragma once
#include "weft/allreduce.cuh"

namespace weft {

template <class T> __device__ __forceinline__ bool vec_aligned(const T *p) { return ((unsigned long long)p & 15) == 0; }

// Vector i of the n elements at p, where p may be off a 16-byte boundary (aligned: it is not).
template <class T> __device__ __forceinline__ U4 load_vec_any(const T *p, long i, long n, bool aligned) {
  if (aligned) return load_vec(p, i, n);
  constexpr int V = VecOf<T>::N;
  union { U4 v; T e[V]; } u;
  u.v = U4{0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (i * V + k < n) u.e[k] = p[i * V + k];
  return u.v;
}
template <class T> __device__ __forceinline__ void store_vec_any(T *p, long i, long n, const U4 &v, bool aligned) {
  if (aligned) { store_vec(p, i, n, v); return; }
  constexpr int V = VecOf<T>::N;
  union { U4 v; T e[V]; } u;
  u.v = v;
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (i * V + k < n) p[i * V + k] = u.e[k];
}

// The launch's start, shared by the collectives: the PDL wait, the epoch; false if a timeout
// earlier aborted this rank (the host reports it).
template <bool PDL> __device__ __forceinline__ bool coll_begin(const Comm &c, u64 &e) {
  if constexpr (PDL) {
    griddep_wait();
    griddep_launch_dependents();
  }
  bool aborted;
  e = launch_epoch(c, aborted);
  return !aborted;
}

__device__ __forceinline__ long coll_first() { return (long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long coll_step() { return (long)gridDim.x * blockDim.x; }

// Loads in flight per copy: 4, or 2 in the multimem kernels (with 4, ptxas held their registers
// to 64 and spilled).
template <bool MULTIMEM> constexpr int MM_COPY_U = MULTIMEM ? 2 : 4;

// Vectors i = first, first + step, ... < nvec: st(i, ld(i)), U loads issued before their stores
// (the same vectors each thread handles one at a time, so the pairing by block is unchanged).
template <int U = 4, class Load, class Store>
__device__ __forceinline__ void strided_copy(long nvec, long first, long step, Load ld, Store st) {
  long i = first;
  for (; i + (U - 1) * step < nvec; i += U * step) {
    U4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = ld(i + u * step);
#pragma unroll
    for (int u = 0; u < U; ++u) st(i + u * step, v[u]);
  }
  for (; i < nvec; i += step) st(i, ld(i));
}

// ---- reduce_scatter ----------------------------------------------------------------------
// Phase 1: this rank's P chunks of x into its half, chunk q at vector q * nvec.
template <class T, int NP = 0, int U = 4>
__device__ __forceinline__ void rs_stage(const Comm &c, int half, const T *x, long n) {
  constexpr int V = VecOf<T>::N;
  const long nvec = (n + V - 1) / V, first = coll_first(), step = coll_step();
  U4 *mine = data_at(c, c.peers[c.rank], half);
  for (int q = 0; q < c.ranks<NP>(); ++q) {
    const T *xq = x + (long)q * n;
    U4 *sq = mine + q * nvec;
    const bool al = vec_aligned(xq);
    strided_copy<U>(nvec, first, step, [=](long i) { return load_vec_any(xq, i, n, al); },
                    [=](long i, const U4 &v) { sq[i] = v; });
  }
}

// Vector i of every rank's half h, reduced: the switch's ld_reduce where there is a multicast
// address (MOP >= 0), else the rank-order fold (the threadload path and the emulated twin).
template <class T, class Op, bool MULTIMEM, int MOP, int NP = 0>
__device__ __forceinline__ U4 rs_reduce_vec(const Comm &c, int half, long i) {
  if constexpr (MULTIMEM && MOP >= 0) {
    if (c.mc) return multimem_ld_reduce<T, MOP>(data_at(c, c.mc, half) + i);
  }
  return fold_ranks<T, Op, NP>(c, half, i);
}

// Phase 2: y (n elements) = the reduction of chunk `chunk` of every rank's half.
template <class T, class Op, bool MULTIMEM, int MOP, int NP = 0>
__device__ __forceinline__ void rs_fold(const Comm &c, int half, int chunk, T *y, long n) {
  constexpr int V = VecOf<T>::N;
  const long nvec = (n + V - 1) / V, first = coll_first(), step = coll_step(), base = chunk * nvec;
  if (vec_aligned(y)) {   // two loops: one fold beside the element-wise stores would hold more registers
    for (long i = first; i < nvec; i += step) store_vec(y, i, n, rs_reduce_vec<T, Op, MULTIMEM, MOP, NP>(c, half, base + i));
  } else {
    for (long i = first; i < nvec; i += step)
      store_vec_any(y, i, n, rs_reduce_vec<T, Op, MULTIMEM, MOP, NP>(c, half, base + i), false);
  }
}

template <class T, class Op, bool MULTIMEM, int MOP, bool PDL, int NP = 0>
__device__ __forceinline__ void reduce_scatter(T *y, const T *x, long n, const Comm &c) {
  u64 e;
  if (!coll_begin<PDL>(c, e)) return;
  const int half = (int)(e & 1);
  rs_stage<T, NP, MM_COPY_U<MULTIMEM>>(c, half, x, n);
  signal_peers(c, SIG_READY, e);
  if (!wait_peers(c, SIG_READY, e)) return;
  rs_fold<T, Op, MULTIMEM, MOP, NP>(c, half, c.rank, y, n);
  launch_retire(c, e);
}

// ---- all_gather --------------------------------------------------------------------------
// Phase 1: x where the others read it (threadload: chunk 0 of this rank's half; multimem: chunk
// r of every rank's half).
template <class T, bool MULTIMEM, int NP = 0>
__device__ __forceinline__ void ag_publish(const Comm &c, int half, const T *x, long n) {
  constexpr int V = VecOf<T>::N;
  const long nvec = (n + V - 1) / V, first = coll_first(), step = coll_step();
  const bool al = vec_aligned(x);
  auto ld = [=](long i) { return load_vec_any(x, i, n, al); };
  if constexpr (MULTIMEM) {
    const long at = c.rank * nvec;
    if (c.mc) {
      U4 *m = data_at(c, c.mc, half) + at;
      strided_copy<2>(nvec, first, step, ld, [=](long i, const U4 &v) { multimem_st<T>(m + i, v); });
      __threadfence_system();   // order multimem.st before the signal
    } else {
      strided_copy<2>(nvec, first, step, ld, [&](long i, const U4 &v) {
#pragma unroll
        for (int p = 0; p < rank_slots<NP>(); ++p)   // the emulated twin: unicast fan-out
          if (p < c.ranks<NP>()) data_at(c, c.peers[p], half)[at + i] = v;
      });
    }
  } else {
    U4 *mine = data_at(c, c.peers[c.rank], half);
    strided_copy(nvec, first, step, ld, [=](long i, const U4 &v) { mine[i] = v; });
  }
}

// Phase 2: y[chunk q] = rank q's x, for every q, starting from this rank's own.
template <class T, bool MULTIMEM, int NP = 0>
__device__ __forceinline__ void ag_collect(const Comm &c, int half, T *y, long n) {
  constexpr int V = VecOf<T>::N;
  const int P = c.ranks<NP>();
  const long nvec = (n + V - 1) / V, first = coll_first(), step = coll_step();
  for (int k = 0; k < P; ++k) {
    const int q = (c.rank + k) % P;
    const U4 *src = MULTIMEM ? data_at(c, c.peers[c.rank], half) + q * nvec : data_at(c, c.peers[q], half);
    T *yq = y + (long)q * n;
    const bool al = vec_aligned(yq);
    strided_copy<MM_COPY_U<MULTIMEM>>(nvec, first, step, [=](long i) { return src[i]; },
                                      [=](long i, const U4 &v) { store_vec_any(yq, i, n, v, al); });
  }
}

template <class T, bool MULTIMEM, bool PDL, int NP = 0>
__device__ __forceinline__ void all_gather(T *y, const T *x, long n, const Comm &c) {
  u64 e;
  if (!coll_begin<PDL>(c, e)) return;
  const int half = (int)(e & 1);
  ag_publish<T, MULTIMEM, NP>(c, half, x, n);
  signal_peers(c, SIG_READY, e);
  if (!wait_peers(c, SIG_READY, e)) return;
  ag_collect<T, MULTIMEM, NP>(c, half, y, n);
  launch_retire(c, e);
}

}  // namespace weft
