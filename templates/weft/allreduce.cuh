// weft/allreduce.cuh: y = op over ranks of x, every rank getting the same bits.
//
// Data path per launch at epoch e, on each rank r of P, with the data half h = e % 2 of every
// rank's symmetric buffer (S_r below):
//   1. copy x into S_r[h]                               (local)
//      signal READY(e) to every rank, wait READY(e) from every rank
//   one_shot:
//   2. y[i] = fold over p = 0..P-1 of S_p[h][i]         (P remote reads per element)
//   two_shot (the vectors are cut into P chunks; rank r owns chunk r):
//   2. v = fold over p of S_p[h][i], for i in chunk r;
//        threadload: S_r[h][i] = v            multimem: S_p[h][i] = v for every p (one
//        multimem.st, or a unicast fan-out in the emulated twin)
//      signal REDUCED(e), wait REDUCED(e)
//   3. threadload: y[i] = S_q[h][i] for i in chunk q (remote)   multimem: y[i] = S_r[h][i] (local)
//
// Pairing: block b of every rank handles the same indices in every chunk, so block b only
// ever waits for block b of the other ranks (pad slots are per block), never for another
// block of its own rank.  The runtime keeps the grid co-resident across all ranks sharing a GPU.
//
// Reuse: S[h] is rewritten at epoch e + 2.  A rank gets there only after its launch e + 1
// saw READY(e + 1) from every rank, which each sent after its launch e had finished (stream
// order): so nobody still reads S[h].  The double buffer makes READY the acknowledgement, with
// no extra round trip.  x may equal y: each thread reads x[i] before it writes y[i].
//
// PDL (pdl = true): the launch may be scheduled while the previous one in the stream is still
// running.  Every thread waits for it (griddepcontrol.wait) before reading the epoch or touching
// any buffer, so the protocol sees launches strictly in stream order; right after that wait the
// block lets the next launch be scheduled, whose blocks then park on free SMs in their own wait
// while this one talks to the other ranks.  The next launch is scheduled only once every block
// of this one has started, so with the GPU to itself its parked blocks take no room this launch
// needs.  With several ranks on one GPU they could take another rank's room; a rank has at most
// two grids resident (the next one's trigger comes after its wait, i.e. after this grid is
// gone), so there the runtime halves the grid cap of pdl comm kernels once more (api.c).
//
// The fold is in rank order from rank 0's value, in f32, rounded once: every rank computes the
// same expression on the same inputs.  (A real multimem.ld_reduce reduces in the switch, in
// its own order; its result is still the one every rank receives.)
#pragma once
#include "weft/launch.cuh"
#include "weft/multimem.cuh"
#include "weft/ops.cuh"
#include "weft/signal.cuh"
#include "weft/types.cuh"

namespace weft {

enum { SIG_READY = 0, SIG_REDUCED = 1 };

// x[i*V .. i*V+V) as one vector; the last vector may be partial (lanes past n read as zero).
template <class T> __device__ __forceinline__ U4 load_vec(const T *x, long i, long n) {
  constexpr int V = VecOf<T>::N;
  if ((i + 1) * V <= n) return *(const U4 *)(x + i * V);
  union { U4 v; T e[V]; } u;
  u.v = U4{0, 0, 0, 0};
#pragma unroll
  for (int k = 0; k < V; ++k)   // unrolled: constant lane indices keep u in registers
    if (i * V + k < n) u.e[k] = x[i * V + k];
  return u.v;
}
template <class T> __device__ __forceinline__ void store_vec(T *y, long i, long n, const U4 &v) {
  constexpr int V = VecOf<T>::N;
  if ((i + 1) * V <= n) { *(U4 *)(y + i * V) = v; return; }
  union { U4 v; T e[V]; } u;
  u.v = v;
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (i * V + k < n) y[i * V + k] = u.e[k];
}

__device__ __forceinline__ U4 *data_at(const Comm &c, char *base, int half) {
  return (U4 *)(base + c.data_offset + half * c.half_bytes);
}

// Rank-order fold of vector i over every rank's half h (NP: weft/signal.cuh's rank_slots).
template <class T, class Op, int NP = 0> __device__ __forceinline__ U4 fold_ranks(const Comm &c, int half, long i) {
  constexpr int V = VecOf<T>::N;
  U4 v[rank_slots<NP>()];
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)   // every load in flight before the first combine
    if (p < c.ranks<NP>()) v[p] = data_at(c, c.peers[p], half)[i];
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = lane_f32<T>(v[0], k);
#pragma unroll
  for (int p = 1; p < rank_slots<NP>(); ++p)
    if (p < c.ranks<NP>()) {
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = Op::combine(acc[k], lane_f32<T>(v[p], k));
    }
  return pack_f32<T>(acc);
}

// Phase 2 of two_shot for vector i of this rank's chunk: the reduced vector, left where
// phase 3 reads it (this rank's half for threadload; every rank's half for multimem).
template <class T, class Op, bool MULTIMEM, int MOP>
__device__ __forceinline__ U4 reduce_chunk_vec(const Comm &c, int half, long i) {
  if constexpr (MULTIMEM && MOP >= 0) {
    if (c.mc) {
      U4 *m = data_at(c, c.mc, half) + i;
      U4 v = multimem_ld_reduce<T, MOP>(m);
      multimem_st<T>(m, v);
      return v;
    }
  }
  U4 v = fold_ranks<T, Op>(c, half, i);
  if constexpr (MULTIMEM) {
#pragma unroll
    for (int p = 0; p < MAX_RANKS; ++p)   // the emulated twin: unicast fan-out
      if (p < c.size) data_at(c, c.peers[p], half)[i] = v;
  } else {
    data_at(c, c.peers[c.rank], half)[i] = v;
  }
  return v;
}

// ---- one_shot_ll: small messages with no signal round -------------------------------------
// Every 4-byte word of x travels with the launch's epoch in one 8-byte store (a single-copy
// atomic at sys scope): slot = epoch << 32 | word, written straight into every rank's LL area
// (S_p[h][sender = r][word]).  A reader polls its own slots until the epoch matches, so the
// data is its own signal: one NVLink write per word, no fence, no flag round trip.  Reuse is
// the double buffer again: a rank writes half h at epoch e + 2 only after its launch e + 1
// read every rank's epoch-(e + 1) words, which each wrote after finishing launch e.
enum { SIG_DATA = 2 };

// word w of x (4 bytes; a 16-bit tail element padded with zero)
template <class T> __device__ __forceinline__ u32 load_word(const T *x, long w, long n) {
  constexpr int PER = 4 / (int)sizeof(T);
  if ((w + 1) * PER <= n) return ((const u32 *)x)[w];
  return (u32)((const u16 *)x)[w * PER];   // PER == 2, one element left
}
template <class T> __device__ __forceinline__ void store_word(T *y, long w, long n, u32 v) {
  constexpr int PER = 4 / (int)sizeof(T);
  if ((w + 1) * PER <= n) ((u32 *)y)[w] = v;
  else ((u16 *)y)[w * PER] = (u16)v;
}
template <class T> __device__ __forceinline__ float word_lane(u32 v, int k) {
  if constexpr (sizeof(T) == 4) return __uint_as_float(v);
  else { T h; h.bits = (u16)(k ? v >> 16 : v & 0xffff); return to_f32(h); }
}
template <class T> __device__ __forceinline__ u32 word_pack(const float *f) {
  if constexpr (sizeof(T) == 4) return __float_as_uint(f[0]);
  else return pack2<T>(f[0], f[1]);
}

// x0: this thread's first word, loaded before the epoch (its load overlaps the epoch's)
template <class T, class Op>
__device__ __forceinline__ void allreduce_ll(T *y, const T *x, long n, const Comm &c, u64 e, u32 x0) {
  constexpr int PER = 4 / (int)sizeof(T);
  const int half = (int)(e & 1);
  const u64 tag = e << 32;
  const long words = (n + PER - 1) / PER, stride = c.half_bytes / (8 * MAX_RANKS);
  const long first = (long)blockIdx.x * blockDim.x + threadIdx.x, step = (long)gridDim.x * blockDim.x;
  for (long w = first; w < words; w += step) {
    const u64 v = tag | (w == first ? x0 : load_word(x, w, n));
#pragma unroll
    for (int p = 0; p < MAX_RANKS; ++p)
      if (p < c.size && !(c.rank == c.mute_rank && c.mute_signal == SIG_DATA))
        st_relaxed_sys((u64 *)data_at(c, c.peers[p], half) + (long)c.rank * stride + w, v);
  }
  int stop = 0;
  Timeout to;
  const u64 *mine = (const u64 *)data_at(c, c.peers[c.rank], half);
  for (long w = first; w < words && !stop; w += step) {
    float acc[PER] = {};
    for (int p = 0; p < c.size; ++p) {
      const u64 v = poll_bounded<false>(
          c, mine + (long)p * stride + w, p, [e](u64 s) { return (s >> 32) == (e & 0xffffffffull); },
          [](u64 s) { return s >> 32; }, stop, to);
      if (stop) break;
#pragma unroll
      for (int k = 0; k < PER; ++k) {
        const float f = word_lane<T>((u32)v, k);
        acc[k] = p == 0 ? f : Op::combine(acc[k], f);
      }
    }
    if (!stop) store_word(y, w, n, word_pack<T>(acc));
  }
  to.report(c, SIG_DATA, e);
  if (__syncthreads_or(stop)) return;
  launch_retire(c, e);
}

// ALGO: 1 one_shot, 2 two_shot, 3 one_shot_ll.  MULTIMEM: the two_shot variant whose reduced chunk is
// stored to every rank (MOP: its ld_reduce operator; -1 where the switch has none, which the
// generator only allows with the emulated twin).  c.mc == 0 selects the emulated twin.
template <class T, class Op, int ALGO, bool MULTIMEM, int MOP, bool PDL>
__device__ __forceinline__ void allreduce(T *y, const T *x, long n, const Comm &c) {
  constexpr int V = VecOf<T>::N;
  if constexpr (PDL) {
    griddep_wait();
    griddep_launch_dependents();
  }
  u32 x0 = 0;
  if constexpr (ALGO == 3) {
    constexpr int PER = 4 / (int)sizeof(T);
    const long w = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (w < (n + PER - 1) / PER) x0 = load_word(x, w, n);
  }
  bool aborted;
  const u64 e = launch_epoch(c, aborted);
  if (aborted) return;   // a timeout earlier: the host reports it
  if constexpr (ALGO == 3) {
    allreduce_ll<T, Op>(y, x, n, c, e, x0);
    return;
  }
  const int half = (int)(e & 1);
  const long nvec = (n + V - 1) / V;
  const int chunks = ALGO == 2 ? c.size : 1;
  const long per = (nvec + chunks - 1) / chunks;                // vectors per chunk
  const long first = (long)blockIdx.x * blockDim.x + threadIdx.x, step = (long)gridDim.x * blockDim.x;
  U4 *mine = data_at(c, c.peers[c.rank], half);

  // 1: x into my half
  for (int q = 0; q < chunks; ++q) {
    const long lo = q * per, hi = min(nvec, lo + per);
    for (long i = lo + first; i < hi; i += step) mine[i] = load_vec(x, i, n);
  }
  signal_peers(c, SIG_READY, e);
  if (!wait_peers(c, SIG_READY, e)) return;

  if (ALGO == 1) {
    for (long i = first; i < nvec; i += step) store_vec(y, i, n, fold_ranks<T, Op>(c, half, i));
    launch_retire(c, e);
    return;
  }

  // 2: reduce my chunk
  {
    const long lo = c.rank * per, hi = min(nvec, lo + per);
    for (long i = lo + first; i < hi; i += step) store_vec(y, i, n, reduce_chunk_vec<T, Op, MULTIMEM, MOP>(c, half, i));
  }
  if (MULTIMEM && c.mc) __threadfence_system();   // order multimem.st before the signal
  signal_peers(c, SIG_REDUCED, e);
  if (!wait_peers(c, SIG_REDUCED, e)) return;

  // 3: every other chunk
  for (int q = 0; q < c.size; ++q) {
    if (q == c.rank) continue;
    const U4 *src = MULTIMEM ? mine : data_at(c, c.peers[q], half);
    const long lo = q * per, hi = min(nvec, lo + per);
    for (long i = lo + first; i < hi; i += step) store_vec(y, i, n, src[i]);
  }
  launch_retire(c, e);
}

}  // namespace weft
