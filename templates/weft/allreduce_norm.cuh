// weft/allreduce_norm.cuh: allreduce + residual + RMS norm in one launch (family allreduce_norm):
//   s = sum over ranks of x (folded in rank order in f32, rounded to T once: the bits weft's
//   allreduce gives), h = s + r (rounded once, written back to r), y = h * rsqrt(mean(h^2) +
//   eps) * w.  Every rank ends with the same y and h, to the bit.
//
// Rows are handled in parts (RowPart, weft/rmsnorm.cuh): ROWS rows per CTA, or one row per
// cluster of CLUSTER CTAs.  Every phase of a launch cuts the rows the same way, so a thread
// only ever rewrites (y, r) elements that it read itself (x, r) earlier in the launch: y may be
// x (in place), and no barrier is needed between one CTA's reads and another's writes.
//
// The protocol at epoch e, on rank q of P, with the data half hf = e % 2 of every rank's
// symmetric buffer S (weft/signal.cuh has the signals; weft/allreduce.cuh the same steps for
// the plain allreduce):
//   one_shot:  1. x's rows this block handles -> S_q[hf].X      signal READY(e), wait READY(e)
//              2. for those rows: s = fold over p of S_p[hf].X; h, y            (every rank, every row)
//   two_shot:  rank q owns rows [q * per, (q + 1) * per), per = ceil(rows / P)
//              1. as one_shot, for this block's rows of every rank's share    READY(e)
//              2. for this block's rows of q's share: s = fold over p of S_p[hf].X; h, y;
//                 h and y -> S_q[hf].H, .Y (threadload) or every S_p[hf].H, .Y (multimem:
//                 multimem.st, or the emulated twin's unicast fan-out)      REDUCED(e)
//              3. for this block's rows of every other share p: y, h <- S_p[hf].Y, .H
//                 (threadload) or S_q[hf].Y, .H (multimem)
//   one_shot_ll: no signal round.  1. every 4-byte word of x goes with the epoch in one 8-byte
//              store (single-copy atomic) into every rank's slots S_p[hf][sender q][word];
//              2. each rank polls its own slots until the epoch matches, and folds as one_shot.
//              16-bit rows of odd length start mid-word, so there every element takes a slot of
//              its own (twice the traffic, rare hidden sizes).
//   One rank (every algorithm): y and h from x alone, as weft's rmsnorm with the residual.  A kernel
//   generated for one rank (NP = 1) compiles only that, and no block reads the epoch before its rows.
//   quant = fp8_e4m3 (one_shot, one_shot_ll, one rank): y leaves as E4M3 codes and a scale per row.
// Pairing (one_shot, two_shot): block b of every rank handles the same rows, so it waits only
// for block b of the others.  Reuse of a half: as the allreduce's (a rank rewrites hf at epoch
// e + 2 only after its launch e + 1 saw every rank's READY, or every rank's words, of e + 1,
// sent after their launch e was over).  A timed-out wait does not return early: the block runs
// on with whatever the buffers hold (every later wait of the rank returns at once, as the abort
// flag is up), so the CTAs of a cluster still meet at every exchange, and the launch does not
// publish its epoch; the host reports the record.
#pragma once
#include "weft/allreduce.cuh"
#include "weft/rmsnorm.cuh"

namespace weft {

// The arguments are rmsnorm's (RmsArgs, weft/rmsnorm.cuh; rstd unused): x is this rank's partial.
// With an FP8 output, RmsArgs::y is unused and y, scale are these: y[rows][cols] as E4M3 codes,
// scale[rows] (weft/rmsnorm.cuh's rms_scale_fp8 says how they are formed).
struct ArnFp8 {
  fp8e4m3 *y;
  float *scale;
};
struct ArnSum {
  __device__ __forceinline__ static float combine(float a, float b) { return a + b; }
};

// Element offsets of a data half's regions (two_shot): X, x's copy; Y and H, the owner's
// results.  Each starts on a 16-byte vector (comm.c leaves room for the rounding).
template <class T> struct ArnRegions {
  long x, y, h;
  __device__ __forceinline__ explicit ArnRegions(long n) {
    constexpr int V = VecOf<T>::N;
    const long nv = (n + V - 1) / V * V;
    x = 0;
    y = nv;
    h = 2 * nv;
  }
};

// a rank's data half as elements (weft/allreduce.cuh's data_at is the same address as vectors)
template <class T> __device__ __forceinline__ T *half_elems(const Comm &c, char *base, int half) {
  return (T *)data_at(c, base, half);
}

// The fold of element e over every rank's half (rank order, f32), rounded to T once.
template <class T, class Op, int NP> __device__ __forceinline__ float fold_scalar(const Comm &c, int half, long e) {
  float acc = 0.0f;
  for (int p = 0; p < c.ranks<NP>(); ++p) {
    const float f = to_f32(half_elems<T>(c, c.peers[p], half)[e]);
    acc = p == 0 ? f : Op::combine(acc, f);
  }
  return to_f32(from_f32<T>(acc));
}

// ---- one_shot_ll's slots --------------------------------------------------------------------
// Lane l of a slot: its word's element l (16-bit: the low half is element 0).
template <class T> __device__ __forceinline__ float slot_lane(u64 v, int l) {
  if constexpr (sizeof(T) == 4) return __uint_as_float((u32)v);
  else {
    T h;
    h.bits = (u16)(l ? (u32)v >> 16 : (u32)v & 0xffff);
    return to_f32(h);
  }
}

// Fold NS consecutive slots from every rank (rank order), each slot LANES elements, into acc.
// All the loads are issued before any is tested; a slot whose epoch is not there yet is polled
// (bounded).  After a timeout (stop) the rest are read once, as they are.
// lane0: the first lane read (a scalar in the high half of a word slot: 1).
template <class T, class Op, int NS, int LANES, int NP>
__device__ __forceinline__ void ll_fold(const Comm &c, const u64 *mine, long stride, long slot, u64 e,
                                        float (&acc)[NS * LANES], int &stop, Timeout &to, int lane0 = 0) {
  const u32 want = (u32)e;
  u64 v[rank_slots<NP>()][NS];
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)
    if (p < c.ranks<NP>()) {
#pragma unroll
      for (int j = 0; j < NS; ++j) v[p][j] = ld_relaxed_sys(mine + p * stride + slot + j);
    }
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)
    if (p < c.ranks<NP>()) {
#pragma unroll
      for (int j = 0; j < NS; ++j)
        if ((u32)(v[p][j] >> 32) != want && !stop)
          v[p][j] = poll_bounded<false>(
              c, mine + p * stride + slot + j, p, [want](u64 s) { return (u32)(s >> 32) == want; },
              [](u64 s) { return s >> 32; }, stop, to);
#pragma unroll
      for (int j = 0; j < NS; ++j)
#pragma unroll
        for (int l = 0; l < LANES; ++l) {
          const float f = slot_lane<T>(v[p][j], l + lane0);
          acc[j * LANES + l] = p == 0 ? f : Op::combine(acc[j * LANES + l], f);
        }
    }
}

// Send vector v (elements e .. e + V) of x, or one scalar, into every rank's slots.
template <class T, int LANES, int NP>
__device__ __forceinline__ void ll_send_vec(const Comm &c, int half, long stride, long e, const U4 &v, u64 tag) {
  constexpr int V = VecOf<T>::N;
  u32 wd[4] = {v.x, v.y, v.z, v.w};
  u64 s[V / LANES];
  if constexpr (LANES == 1 && sizeof(T) == 2) {
#pragma unroll
    for (int k = 0; k < V; ++k) s[k] = tag | (k & 1 ? wd[k / 2] >> 16 : wd[k / 2] & 0xffff);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) s[k] = tag | wd[k];
  }
  const long slot = e / LANES;
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)
    if (p < c.ranks<NP>() && !(c.rank == c.mute_rank && c.mute_signal == SIG_DATA)) {
      u64 *dst = (u64 *)half_elems<char>(c, c.peers[p], half) + (long)c.rank * stride + slot;
#pragma unroll
      for (int k = 0; k < V / LANES; ++k) st_relaxed_sys(dst + k, s[k]);
    }
}
template <int NP> __device__ __forceinline__ void ll_send_slot(const Comm &c, int half, long stride, long slot, u64 s) {
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)
    if (p < c.ranks<NP>() && !(c.rank == c.mute_rank && c.mute_signal == SIG_DATA))
      st_relaxed_sys((u64 *)half_elems<char>(c, c.peers[p], half) + (long)c.rank * stride + slot, s);
}

// ---- the kernel -------------------------------------------------------------------------------
// ALGO: 1 one_shot, 2 two_shot, 3 one_shot_ll.  MULTIMEM, MOP: as weft::allreduce.  NP: the world
// size it was generated for, 0 for any (weft/signal.cuh's rank_slots).  FP8: y is E4M3 with a
// scale per row (ArnFp8; one_shot and one_shot_ll: two_shot's regions hold y in T).
template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool RESIDUAL, bool PUSH, int ALGO, bool MULTIMEM,
          int MOP, bool PDL, int NP, bool FP8>
struct AllreduceNorm {
  static constexpr int V = VecOf<T>::N;
  static constexpr int G = THREADS / ROWS;
  static constexpr int PART_SETS = FP8 ? 4 : 2;   // the sums' two sets, then the maxima's
  using Part = RowPart<T, CLUSTER, G>;
  using Ex = Exchange<CLUSTER, FP8 ? 2 : 1, PUSH>;
  static_assert(!FP8 || ALGO != 2, "two_shot gathers y in T");

  const RmsArgs<T> &a;
  const ArnFp8 &q;
  const Comm &c;
  u32 rank;   // in the cluster
  int half;
  u64 e;
  ArnRegions<T> reg;

  // body(part, k) for this thread's part of every row in [lo, hi) its CTA handles: row groups
  // base, base + nclusters * ROWS, ... (the same on every rank and in every phase)
  template <class Body> __device__ __forceinline__ void for_parts(long lo, long hi, Body &&body) const {
    const long nclusters = gridDim.x / CLUSTER;
    const int t = threadIdx.x % G;
    u32 k = 0;
    for (long base = lo + (long)(blockIdx.x / CLUSTER) * ROWS; base < hi; base += nclusters * ROWS, ++k)
      body(Part(a.x, base + threadIdx.x / G, hi, a.cols, rank, t), k);
  }
  // two_shot's shares: rank p owns rows [p * per, min(rows, (p + 1) * per))
  __device__ __forceinline__ long share_lo(int p) const { return min(a.rows, p * share_rows()); }
  __device__ __forceinline__ long share_hi(int p) const { return min(a.rows, (p + 1) * share_rows()); }
  __device__ __forceinline__ long share_rows() const { return (a.rows + c.ranks<NP>() - 1) / c.ranks<NP>(); }

  // 1 (one_shot, two_shot): this thread's part of x into S_mine.X
  __device__ __forceinline__ void copy_in(long lo, long hi) const {
    T *mine = half_elems<T>(c, c.peers[c.rank], half) + reg.x;
    for_parts(lo, hi, [&](const Part &p, u32) {
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) *(U4 *)(mine + p.vec_elem(i)) = load_once((const U4 *)(a.x + p.vec_elem(i)));
      if (p.scalar_owner) mine[p.scalar_elem()] = a.x[p.scalar_elem()];
    });
  }

  // The residual and the norm of part p, from s (h[], hs: the fold, rounded); y and h go to
  // this rank's y and r, and (two_shot) to the regions the other ranks read.
  template <bool WVEC, class Publish>
  __device__ __forceinline__ void finish(U4 (&h)[PT], float hs, const Part &p, u32 k, float (*part)[THREADS / 32],
                                         typename Ex::Slots &ex, Publish &&publish) const {
    if constexpr (RESIDUAL) {
      U4 rv[PT];
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) rv[i] = load_once((const U4 *)(a.r + p.vec_elem(i)));
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) {
          h[i] = add_rounded<T>(h[i], rv[i]);
          store_stream((U4 *)(a.r + p.vec_elem(i)), h[i]);
          publish(reg.h + p.vec_elem(i), h[i]);
        }
      if (p.scalar_owner) {
        const T hv = from_f32<T>(hs + to_f32(a.r[p.scalar_elem()]));
        a.r[p.scalar_elem()] = hv;
        hs = to_f32(hv);
        publish.scalar(reg.h + p.scalar_elem(), hv);
      }
    }
    if constexpr (FP8) {
      const float scale = rms_scale_fp8<T, CLUSTER, THREADS, ROWS, PT, PUSH, WVEC>(
          h, hs, p, a.w, a.cols, a.eps, part, part + 2, ex, k,
          [&](int i, u64 codes) {   // V codes: 8 bytes (16-bit T) or 4 (f32), on their own alignment
            if constexpr (V == 8) *(u64 *)(q.y + p.vec_elem(i)) = codes;
            else *(u32 *)(q.y + p.vec_elem(i)) = (u32)codes;
          },
          [&](unsigned char code) { q.y[p.scalar_elem()].bits = code; });
      if (p.live && threadIdx.x % G == 0 && rank == 0) q.scale[p.off / a.cols] = scale;
    } else {
      rms_scale<T, CLUSTER, THREADS, ROWS, PT, PUSH, WVEC>(
          h, hs, p, a.w, a.cols, a.eps, part, ex, k,
          [&](int i, const U4 &v) {
            store_stream((U4 *)(a.y + p.vec_elem(i)), v);
            publish(reg.y + p.vec_elem(i), v);
          },
          [&](float v) {
            const T yv = from_f32<T>(v);
            a.y[p.scalar_elem()] = yv;
            publish.scalar(reg.y + p.scalar_elem(), yv);
          });
    }
  }

  // 2 (one_shot, two_shot): the fold, the residual and the norm of rows [lo, hi).  LOCAL: one rank,
  // whose sum is its own x (the fold of one value rounds back to it): read x, no buffer, no signal.
  template <bool WVEC, bool LOCAL, class Publish>
  __device__ __forceinline__ void reduce_rows(long lo, long hi, float (*part)[THREADS / 32], typename Ex::Slots &ex,
                                              Publish &&publish) const {
    for_parts(lo, hi, [&](const Part &p, u32 k) {
      U4 h[PT];
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) h[i] = LOCAL ? load_once((const U4 *)(a.x + p.vec_elem(i))) : reduce_vec(p.vec_elem(i));
      float hs = 0.0f;
      if (p.scalar_owner) hs = LOCAL ? to_f32(a.x[p.scalar_elem()]) : fold_scalar<T, ArnSum, NP>(c, half, reg.x + p.scalar_elem());
      finish<WVEC>(h, hs, p, k, part, ex, publish);
    });
  }
  __device__ __forceinline__ U4 reduce_vec(long e) const {
    if constexpr (MULTIMEM && MOP >= 0) {
      if (c.mc) return multimem_ld_reduce<T, MOP>((U4 *)(half_elems<T>(c, c.mc, half) + reg.x + e));
    }
    return fold_ranks<T, ArnSum, NP>(c, half, (reg.x + e) / V);
  }

  // 3 (two_shot): the other shares' y and h, from their owners (threadload) or from S_mine (multimem)
  __device__ __forceinline__ void copy_out() const {
    for (int q = 0; q < c.ranks<NP>(); ++q) {
      if (q == c.rank) continue;
      const T *src = half_elems<T>(c, MULTIMEM ? c.peers[c.rank] : c.peers[q], half);
      for_parts(share_lo(q), share_hi(q), [&](const Part &p, u32) {
#pragma unroll
        for (int i = 0; i < PT; ++i)
          if (i * G < p.n) {
            const long e = p.vec_elem(i);
            const U4 yv = *(const U4 *)(src + reg.y + e);
            if constexpr (RESIDUAL) {
              const U4 hv = *(const U4 *)(src + reg.h + e);
              store_stream((U4 *)(a.r + e), hv);
            }
            store_stream((U4 *)(a.y + e), yv);
          }
        if (p.scalar_owner) {
          const long e = p.scalar_elem();
          if constexpr (RESIDUAL) a.r[e] = src[reg.h + e];
          a.y[e] = src[reg.y + e];
        }
      });
    }
  }

  // one_shot_ll: 1. every part's words (EMODE: elements) into every rank's slots
  __device__ __forceinline__ void ll_send(long stride, bool emode) const {
    constexpr int LANES = 4 / (int)sizeof(T);
    const u64 tag = e << 32;
    for_parts(0, a.rows, [&](const Part &p, u32) {
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) {
          const U4 v = load_once((const U4 *)(a.x + p.vec_elem(i)));
          if (LANES == 1 || !emode) ll_send_vec<T, LANES, NP>(c, half, stride, p.vec_elem(i), v, tag);
          else ll_send_vec<T, 1, NP>(c, half, stride, p.vec_elem(i), v, tag);
        }
      if (p.scalar_owner) {
        const long el = p.scalar_elem();
        if constexpr (sizeof(T) == 4) ll_send_slot<NP>(c, half, stride, el, tag | __float_as_uint(to_f32(a.x[el])));
        else if (emode) ll_send_slot<NP>(c, half, stride, el, tag | a.x[el].bits);
        else if (el % 2 == 0)   // the pair (el, el + 1) is this row's and the next scalar thread's
          ll_send_slot<NP>(c, half, stride, el / 2, tag | a.x[el].bits | (u32)a.x[el + 1].bits << 16);
      }
    });
  }
  // one_shot_ll: 2. poll, fold, the residual and the norm of every row.  EMODE (16-bit rows of odd
  // length): a slot per element, else a slot per 4-byte word; a runtime choice inside the fold
  // only, so the row loop exists once.
  template <bool WVEC>
  __device__ __forceinline__ void ll_rows(long stride, bool emode, float (*part)[THREADS / 32], typename Ex::Slots &ex,
                                          int &stop, Timeout &to) const {
    constexpr int LANES = 4 / (int)sizeof(T);
    const u64 *mine = (const u64 *)half_elems<char>(c, c.peers[c.rank], half);
    for_parts(0, a.rows, [&](const Part &p, u32 k) {
      U4 h[PT];
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) {
          float f[V];
          const long el = p.vec_elem(i);
          if (LANES == 1 || !emode) {
#pragma unroll
            for (int b = 0; b < V / LANES; b += 2) {   // two slots a batch: 16 loads in flight at 8 ranks
              float g[2 * LANES];
              ll_fold<T, ArnSum, 2, LANES, NP>(c, mine, stride, el / LANES + b, e, g, stop, to);
#pragma unroll
              for (int l = 0; l < 2 * LANES; ++l) f[b * LANES + l] = g[l];
            }
          } else {
#pragma unroll
            for (int b = 0; b < V; b += 2) {
              float g[2];
              ll_fold<T, ArnSum, 2, 1, NP>(c, mine, stride, el + b, e, g, stop, to);
              f[b] = g[0];
              f[b + 1] = g[1];
            }
          }
          h[i] = pack_f32<T>(f);
        }
      float hs = 0.0f;
      if (p.scalar_owner) {
        const long el = p.scalar_elem();
        float g[1];
        ll_fold<T, ArnSum, 1, 1, NP>(c, mine, stride, emode ? el : el / LANES, e, g, stop, to, emode ? 0 : (int)(el % LANES));
        hs = to_f32(from_f32<T>(g[0]));
      }
      finish<WVEC>(h, hs, p, k, part, ex, NoPublish{});
    });
  }

  struct NoPublish {
    __device__ __forceinline__ void operator()(long, const U4 &) const {}
    __device__ __forceinline__ void scalar(long, T) const {}
  };
  // two_shot: the owner's y and h where the others read them
  struct Publish {
    const Comm &c;
    int half;
    __device__ __forceinline__ void operator()(long el, const U4 &v) const {
      if constexpr (MULTIMEM && MOP >= 0) {
        if (c.mc) { multimem_st<T>((U4 *)(half_elems<T>(c, c.mc, half) + el), v); return; }
      }
      if constexpr (MULTIMEM) {   // the emulated twin: unicast fan-out
#pragma unroll
        for (int p = 0; p < rank_slots<NP>(); ++p)
          if (p < c.ranks<NP>()) *(U4 *)(half_elems<T>(c, c.peers[p], half) + el) = v;
      } else {
        *(U4 *)(half_elems<T>(c, c.peers[c.rank], half) + el) = v;
      }
    }
    __device__ __forceinline__ void scalar(long el, T v) const {
      if constexpr (MULTIMEM) {
        for (int p = 0; p < c.ranks<NP>(); ++p) half_elems<T>(c, c.peers[p], half)[el] = v;   // no multimem.st of 2 bytes
      } else {
        half_elems<T>(c, c.peers[c.rank], half)[el] = v;
      }
    }
  };

  template <bool WVEC> __device__ __forceinline__ bool run(float (*part)[THREADS / 32], typename Ex::Slots &ex) const {
    if (c.ranks<NP>() == 1) {   // every algorithm: the norm of x, as weft's rmsnorm with the residual
      reduce_rows<WVEC, true>(0, a.rows, part, ex, NoPublish{});
      return true;
    }
    if constexpr (NP == 1) {
      return true;   // never reached: the exchange below is not compiled for one rank
    } else if constexpr (ALGO == 3) {
      const long stride = c.half_bytes / (8 * MAX_RANKS);   // slots per sender
      int stop = 0;
      Timeout to;
      const bool emode = sizeof(T) == 2 && (a.cols & 1);
      ll_send(stride, emode);
      __syncthreads();   // in place: a scalar pair's word is read before its second element is rewritten
      ll_rows<WVEC>(stride, emode, part, ex, stop, to);
      to.report(c, SIG_DATA, e);
      return !__syncthreads_or(stop);
    } else if constexpr (ALGO == 1) {
      copy_in(0, a.rows);
      signal_peers(c, SIG_READY, e);
      const bool ok = wait_peers(c, SIG_READY, e);
      reduce_rows<WVEC, false>(0, a.rows, part, ex, NoPublish{});
      return ok;
    } else {
      for (int q = 0; q < c.ranks<NP>(); ++q) copy_in(share_lo(q), share_hi(q));
      signal_peers(c, SIG_READY, e);
      bool ok = wait_peers(c, SIG_READY, e);
      reduce_rows<WVEC, false>(share_lo(c.rank), share_hi(c.rank), part, ex, Publish{c, half});
      if (MULTIMEM && c.mc) __threadfence_system();   // order multimem.st before the signal
      signal_peers(c, SIG_REDUCED, e);
      ok = wait_peers(c, SIG_REDUCED, e) && ok;
      copy_out();
      return ok;
    }
  }
};

template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool RESIDUAL, bool PUSH, int ALGO, bool MULTIMEM,
          int MOP, bool PDL, int NP, bool FP8>
__device__ __forceinline__ void allreduce_norm(const RmsArgs<T> &a, const ArnFp8 &q, const Comm &c) {
  static_assert((THREADS / ROWS) % 32 == 0, "every row needs whole warps");
  static_assert(CLUSTER == 1 || ROWS == 1, "a row split across a cluster takes its CTAs whole");
  static_assert(THREADS >= MAX_RANKS, "a block's first threads signal and wait for one rank each");
  using K = AllreduceNorm<T, CLUSTER, THREADS, ROWS, PT, RESIDUAL, PUSH, ALGO, MULTIMEM, MOP, PDL, NP, FP8>;
  __shared__ float part[K::PART_SETS][THREADS / 32];
  __shared__ typename K::Ex::Slots ex;
  K::Ex::init(ex);
  if constexpr (PDL) {
    griddep_wait();
    griddep_launch_dependents();
  }
  constexpr int V = VecOf<T>::N;
  if constexpr (NP == 1) {
    // One rank waits on nobody and uses no half, so no block reads the epoch before its rows (with a
    // grid of many waves that read would stall every block's start); block 0 advances it once, which
    // the next launch sees, as it reads the counter only after this grid has completed.
    const K k{a, q, c, CLUSTER > 1 ? cluster_ctarank() : 0u, 0, 0, ArnRegions<T>(a.rows * a.cols)};
    if (a.cols % V == 0 && ((u64)a.w & 15) == 0) k.template run<true>(part, ex);
    else k.template run<false>(part, ex);
    cluster_retire<CLUSTER>();
    if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64 *)&c.state->epoch = *(volatile u64 *)&c.state->epoch + 1;
    return;
  }
  bool aborted;   // a timeout earlier: every wait returns at once and the host reports it
  const u64 e = launch_epoch(c, aborted);
  const K k{a, q, c, CLUSTER > 1 ? cluster_ctarank() : 0u, (int)(e & 1), e, ArnRegions<T>(a.rows * a.cols)};
  const bool ok = a.cols % V == 0 && ((u64)a.w & 15) == 0 ? k.template run<true>(part, ex) : k.template run<false>(part, ex);
  cluster_retire<CLUSTER>();
  if (ok && !aborted) launch_retire(c, e);
}

}  // namespace weft
