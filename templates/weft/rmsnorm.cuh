// weft/rmsnorm.cuh: RMS norm of each row (family rmsnorm):
//   y = h * rsqrt(mean(h^2) + eps) * w,  h = x (or, with RESIDUAL, h = x + r, stored back to r).
// f32 math; h is rounded to T once and that rounded h is what gets normalised, as torch's
// `x + r` followed by rms_norm would see it.
//
// The row is read once and written once: a thread holds PT 16-byte vectors of its row in
// registers between the sum of squares and the scaling.  Work split:
//   - ROWS rows per CTA, each on a group of G = THREADS / ROWS threads (one warp or more): short
//     rows keep every lane busy and still make whole CTAs;
//   - CLUSTER CTAs per row (ROWS == 1): the row's vectors split into CLUSTER contiguous chunks;
//     the CTAs' sums of squares meet through cluster_allreduce (seed 000's primitive), which
//     folds ranks 0..CLUSTER-1 in the same order in every CTA, so every CTA of the row scales by
//     the same rstd, to the bit.
// Within a group the sum is a butterfly (xor shuffles: every lane ends with the same bits, since
// each step adds the same two values) and, across the group's warps, a fold in warp order that
// every thread does alike.  Rows that start off a 16-byte boundary (odd cols) are split by
// RowSplit: the few scalars at their ends go to the threads of the last CTA.  w is read through
// L1 (every row of the CTA wants the same w) and in vectors wherever it lines up with the row.
#pragma once
#include "weft/types.cuh"
#include "weft/cluster.cuh"

namespace weft {

template <class T> struct RmsArgs {
  T *y;
  const T *x, *w;
  T *r;          // RESIDUAL: read as the residual, overwritten with h
  float *rstd;   // CTA_RSTD: [rows][CLUSTER]
  float eps;
  long rows, cols;
};

struct RmsSum {
  __device__ __forceinline__ static Vals<1> combine(const Vals<1> &a, const Vals<1> &b) {
    Vals<1> r;
    r.v[0] = a.v[0] + b.v[0];
    return r;
  }
};

__device__ __forceinline__ float rsqrt_approx(float x) {
  float y;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// An empty asm that "changes" v: the compiler must keep the packed vector rather than the V
// floats it unpacked for the sum of squares (twice the registers across the combine).
__device__ __forceinline__ void keep_packed(U4 &v) {
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
}

// w's elements [c, c + V) as one vector, from scalars: w does not line up with this row's
// vectors (odd cols).  The loads are volatile so the compiler cannot hoist every vector's loads
// above the stores before them: rows of odd length are rare, and the registers that hoisting
// would take cost every kernel its occupancy.
template <class T> __device__ __forceinline__ U4 load_w_scalars(const T *w);
template <> __device__ __forceinline__ U4 load_w_scalars<f32>(const f32 *w) {
  U4 v;
  asm volatile("ld.global.nc.b32 %0, [%4];\n\tld.global.nc.b32 %1, [%4+4];\n\t"
               "ld.global.nc.b32 %2, [%4+8];\n\tld.global.nc.b32 %3, [%4+12];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(w));
  return v;
}
__device__ __forceinline__ U4 load_w_scalars16(const void *w) {
  u16 e[8];
  asm volatile("ld.global.nc.b16 %0, [%8];\n\tld.global.nc.b16 %1, [%8+2];\n\t"
               "ld.global.nc.b16 %2, [%8+4];\n\tld.global.nc.b16 %3, [%8+6];\n\t"
               "ld.global.nc.b16 %4, [%8+8];\n\tld.global.nc.b16 %5, [%8+10];\n\t"
               "ld.global.nc.b16 %6, [%8+12];\n\tld.global.nc.b16 %7, [%8+14];"
               : "=h"(e[0]), "=h"(e[1]), "=h"(e[2]), "=h"(e[3]), "=h"(e[4]), "=h"(e[5]), "=h"(e[6]), "=h"(e[7])
               : "l"(w));
  U4 v;
  v.x = e[0] | (u32)e[1] << 16;
  v.y = e[2] | (u32)e[3] << 16;
  v.z = e[4] | (u32)e[5] << 16;
  v.w = e[6] | (u32)e[7] << 16;
  return v;
}
template <> __device__ __forceinline__ U4 load_w_scalars<bf16>(const bf16 *w) { return load_w_scalars16(w); }
template <> __device__ __forceinline__ U4 load_w_scalars<f16>(const f16 *w) { return load_w_scalars16(w); }

// Sum (MAX: maximum) over the G threads of a row group: every thread of the group gets the same
// bits.  part: [2][ROWS * (G / 32)] floats, set k & 1 for the row loop's k-th row (a thread
// reaches set k & 1 again only after the barrier of row k + 1, which every thread passes after
// reading row k's set).
template <int THREADS, int ROWS, bool MAX = false>
__device__ __forceinline__ float group_sum(float v, float (*part)[THREADS / 32], u32 k) {
  constexpr int G = THREADS / ROWS, WARPS = G / 32;
  auto fold = [](float a, float b) { return MAX ? fmaxf(a, b) : a + b; };
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fold(v, __shfl_xor_sync(0xffffffffu, v, off));
  if constexpr (WARPS > 1) {
    const int warp = threadIdx.x >> 5, first = (threadIdx.x / G) * WARPS;
    if ((threadIdx.x & 31) == 0) part[k & 1][warp] = v;
    __syncthreads();
    v = part[k & 1][first];
#pragma unroll
    for (int i = 1; i < WARPS; ++i) v = fold(v, part[k & 1][first + i]);
  }
  return v;
}

template <int CLUSTER, bool PUSH> using RmsExchange = Exchange<CLUSTER, 1, PUSH>;

// This thread's part of `row` of x[][cols] at `base` (rows at or past `end` are not live): the
// vectors first + i * G (i * G < n) of the row's vector part, cut into CLUSTER contiguous
// chunks (this CTA's is chunk `rank`), and, for a thread of the last CTA, one of the row's
// unaligned end scalars.  Every kernel that handles a row in parts uses this one cut, so a
// thread touches the same elements of every array whose rows line up with x's.
template <class T, int CLUSTER, int G> struct RowPart {
  long off;        // the row's first element
  RowSplit<T> s;
  long first, n;
  bool live, scalar_owner;
  long si;         // the scalar's index within the row
  __device__ __forceinline__ RowPart(const T *base, long row, long end, long cols, u32 rank, int t)
      : off((row < end ? row : 0) * cols), s(base + off, cols) {
    live = row < end;
    const long chunk = (s.nvec + CLUSTER - 1) / CLUSTER;
    const long vbeg = (long)rank * chunk;
    const long vend = !live ? vbeg : vbeg + chunk < s.nvec ? vbeg + chunk : s.nvec;
    first = vbeg + t;
    n = vend - first;
    scalar_owner = live && rank == CLUSTER - 1 && t < s.head + s.tail;
    si = s.scalar_index(t);
  }
  // the array element where this thread's vector i starts
  __device__ __forceinline__ long vec_elem(int i) const { return off + s.head + (first + (long)i * G) * VecOf<T>::N; }
  __device__ __forceinline__ long scalar_elem() const { return off + si; }
};

// h = x + r, rounded once: the residual add every norm of these families does.
template <class T> __device__ __forceinline__ U4 add_rounded(const U4 &x, const U4 &r) {
  constexpr int V = VecOf<T>::N;
  float f[V];
#pragma unroll
  for (int e = 0; e < V; ++e) f[e] = lane_f32<T>(x, e) + lane_f32<T>(r, e);
  return pack_f32<T>(f);
}

// The sum of squares of this thread's part p of a row (h: its vectors, hs: its scalar).  Two
// accumulators: half the dependent chain, and a shorter rounding path.
template <class T, int CLUSTER, int G, int PT>
__device__ __forceinline__ float part_sumsq(U4 (&h)[PT], float hs, const RowPart<T, CLUSTER, G> &p) {
  constexpr int V = VecOf<T>::N;
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int i = 0; i < PT; ++i)
    if (i * G < p.n) {
#pragma unroll
      for (int e = 0; e < V; e += 2) {
        const float u = lane_f32<T>(h[i], e), v = lane_f32<T>(h[i], e + 1);
        s0 = fmaf(u, u, s0);
        s1 = fmaf(v, v, s1);
      }
    }
  if constexpr (V > 4) {
#pragma unroll
    for (int i = 0; i < PT; ++i) keep_packed(h[i]);
  }
  return fmaf(hs, hs, s0 + s1);
}

// w's elements for this thread's part p of a row: WVEC, its vectors loaded here (before the
// row's combine, so they are in flight beside it); otherwise read in scalars where they are used
// (at(i), after it).  ws: the weight of the part's scalar.
template <class T, int G, int PT, bool WVEC> struct RowW {
  const T *wt;
  [[maybe_unused]] U4 wv[PT];
  float ws;
  template <int CLUSTER>
  __device__ __forceinline__ RowW(const T *w, const RowPart<T, CLUSTER, G> &p) : wt(w + p.s.head + p.first * VecOf<T>::N) {
    if constexpr (WVEC) {
      const U4 *vw = reinterpret_cast<const U4 *>(wt);
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) wv[i] = load_keep(vw + i * G);
    }
    ws = p.scalar_owner ? to_f32(w[p.si]) : 0.0f;
  }
  __device__ __forceinline__ U4 at(int i) const {
    if constexpr (WVEC) return wv[i];
    else return load_w_scalars<T>(wt + i * G * VecOf<T>::N);
  }
};

// The norm of this thread's part p of a row: h (its vectors, rounded to T) and hs (its scalar)
// are what gets normalised; y = h * rstd * w goes to store(i, vector) and store_scalar(value).
// Every thread of the CTA (and of its cluster) calls it alike, live row or not: the sums have
// barriers.  k: the row loop's count (the partial sums' and the exchange's slot parity).
template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool PUSH, bool WVEC, class Store, class StoreScalar>
__device__ __forceinline__ float rms_scale(U4 (&h)[PT], float hs, const RowPart<T, CLUSTER, THREADS / ROWS> &p,
                                           const T *w, long cols, float eps, float (*part)[THREADS / 32],
                                           typename RmsExchange<CLUSTER, PUSH>::Slots &ex, u32 k, Store &&store,
                                           StoreScalar &&store_scalar) {
  constexpr int V = VecOf<T>::N;
  constexpr int G = THREADS / ROWS;
  float ss = part_sumsq<T, CLUSTER, G, PT>(h, hs, p);
  const RowW<T, G, PT, WVEC> rw(w, p);
  const float ws = rw.ws;

  ss = group_sum<THREADS, ROWS>(ss, part, k);
  if constexpr (CLUSTER > 1) {
    Vals<1> cv;
    cv.v[0] = ss;
    ss = RmsExchange<CLUSTER, PUSH>::template combine<RmsSum>(ex, k, cv).v[0];
  }
  const float rstd = rsqrt_approx(ss / (float)cols + eps);

#pragma unroll
  for (int i = 0; i < PT; ++i)
    if (i * G < p.n) {
      const U4 wi = rw.at(i);
      float f[V];
#pragma unroll
      for (int e = 0; e < V; ++e) f[e] = lane_f32<T>(h[i], e) * rstd * lane_f32<T>(wi, e);
      store(i, pack_f32<T>(f));
    }
  if (p.scalar_owner) store_scalar(hs * rstd * ws);
  return rstd;
}

// The norm of part p quantised to FP8 E4M3 with a scale per row (the dynamic per-token scheme):
// y = h * rstd * w in f32 as rms_scale has it, amax = max(max |y| over the row, 1/512),
// scale = amax / 448 (f32 division, rounded once), q = e4m3(y * (448 / amax)) (one rounding for
// the reciprocal, one for the product, then the saturated E4M3 rounding).  max |y| is rstd times
// max |h * w|, taken beside the sum of squares, so the row needs one exchange (cluster: both values
// in one combine) and h stays in registers.  store(i, codes): vector i's V codes, element 0 in the
// low byte; store_scalar(code); the scale is returned (the same bits in every thread of the row).
// part2: a second [2][THREADS / 32] set for the maxima.
struct RmsSumMax {
  __device__ __forceinline__ static Vals<2> combine(const Vals<2> &a, const Vals<2> &b) {
    Vals<2> r;
    r.v[0] = a.v[0] + b.v[0];
    r.v[1] = fmaxf(a.v[1], b.v[1]);
    return r;
  }
};
constexpr float E4M3_MAX = 448.0f;
constexpr float E4M3_MIN_AMAX = 1.0f / 512.0f;   // the smallest amax: scale >= 1 / (448 * 512)

template <class T> __device__ __forceinline__ u64 e4m3_vec(const float (&f)[VecOf<T>::N]) {
  constexpr int V = VecOf<T>::N;
  u64 codes = 0;
#pragma unroll
  for (int e = 0; e < V; e += 2) codes |= (u64)e4m3x2(f[e], f[e + 1]) << (8 * e);
  return codes;
}

template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool PUSH, bool WVEC, class Store, class StoreScalar>
__device__ __forceinline__ float rms_scale_fp8(U4 (&h)[PT], float hs, const RowPart<T, CLUSTER, THREADS / ROWS> &p,
                                               const T *w, long cols, float eps, float (*part)[THREADS / 32],
                                               float (*part2)[THREADS / 32],
                                               typename Exchange<CLUSTER, 2, PUSH>::Slots &ex, u32 k, Store &&store,
                                               StoreScalar &&store_scalar) {
  constexpr int V = VecOf<T>::N;
  constexpr int G = THREADS / ROWS;
  float ss = part_sumsq<T, CLUSTER, G, PT>(h, hs, p);
  const RowW<T, G, PT, WVEC> rw(w, p);
  const float ws = rw.ws;
  float m = fabsf(hs * ws);
#pragma unroll
  for (int i = 0; i < PT; ++i)
    if (i * G < p.n) {
      const U4 wi = rw.at(i);
#pragma unroll
      for (int e = 0; e < V; ++e) m = fmaxf(m, fabsf(lane_f32<T>(h[i], e) * lane_f32<T>(wi, e)));
    }
  ss = group_sum<THREADS, ROWS>(ss, part, k);
  m = group_sum<THREADS, ROWS, true>(m, part2, k);
  if constexpr (CLUSTER > 1) {
    Vals<2> cv;
    cv.v[0] = ss;
    cv.v[1] = m;
    cv = Exchange<CLUSTER, 2, PUSH>::template combine<RmsSumMax>(ex, k, cv);
    ss = cv.v[0];
    m = cv.v[1];
  }
  const float rstd = rsqrt_approx(ss / (float)cols + eps);
  const float amax = fmaxf(m * rstd, E4M3_MIN_AMAX);
  const float inv = __fdiv_rn(E4M3_MAX, amax);

#pragma unroll
  for (int i = 0; i < PT; ++i)
    if (i * G < p.n) {
      const U4 wi = rw.at(i);
      float f[V];
#pragma unroll
      for (int e = 0; e < V; ++e) f[e] = lane_f32<T>(h[i], e) * rstd * lane_f32<T>(wi, e) * inv;
      store(i, e4m3_vec<T>(f));
    }
  if (p.scalar_owner) store_scalar((unsigned char)e4m3x2(hs * rstd * ws * inv, 0.0f));
  return __fdiv_rn(amax, E4M3_MAX);
}

// The row loop.  WVEC: every row's vectors line up with w's (cols a multiple of V, x and w
// 16-byte aligned), so w is read in vectors, issued before the combine; otherwise in scalars,
// after it.  The two are separate copies of the loop, chosen by a grid-uniform test: one loop
// with a per-row branch between them took 20 more registers than either alone.
template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool RESIDUAL, bool CTA_RSTD, bool PUSH, bool WVEC>
__device__ __forceinline__ void rmsnorm_rows(const RmsArgs<T> &a, u32 rank, float (*part)[THREADS / 32],
                                             typename RmsExchange<CLUSTER, PUSH>::Slots &ex) {
  constexpr int G = THREADS / ROWS;
  const int t = threadIdx.x % G;
  const long nclusters = gridDim.x / CLUSTER;
  u32 k = 0;
  // The loop runs alike in every thread of the CTA (and every CTA of the cluster): a group
  // whose row is past the end still takes part in the barriers.
  for (long base = (long)(blockIdx.x / CLUSTER) * ROWS; base < a.rows; base += nclusters * ROWS, ++k) {
    const long row = base + threadIdx.x / G;
    const RowPart<T, CLUSTER, G> p(a.x, row, a.rows, a.cols, rank, t);
    const U4 *vx = reinterpret_cast<const U4 *>(a.x + p.vec_elem(0));
    U4 *vy = reinterpret_cast<U4 *>(a.y + p.vec_elem(0));
    U4 *vr = reinterpret_cast<U4 *>(a.r + p.vec_elem(0));   // never dereferenced without RESIDUAL

    U4 h[PT];
    [[maybe_unused]] U4 rv[PT];
#pragma unroll
    for (int i = 0; i < PT; ++i)
      if (i * G < p.n) {
        h[i] = load_stream(vx + i * G);
        if constexpr (RESIDUAL) rv[i] = load_once(vr + i * G);
      }
    float hs = 0.0f;
    if (p.scalar_owner) {
      hs = to_f32(a.x[p.scalar_elem()]);
      if constexpr (RESIDUAL) {
        const T hv = from_f32<T>(hs + to_f32(a.r[p.scalar_elem()]));
        a.r[p.scalar_elem()] = hv;
        hs = to_f32(hv);
      }
    }
    if constexpr (RESIDUAL) {
#pragma unroll
      for (int i = 0; i < PT; ++i)
        if (i * G < p.n) {
          h[i] = add_rounded<T>(h[i], rv[i]);
          store_stream(vr + i * G, h[i]);
        }
    }
    const float rstd = rms_scale<T, CLUSTER, THREADS, ROWS, PT, PUSH, WVEC>(
        h, hs, p, a.w, a.cols, a.eps, part, ex, k, [&](int i, const U4 &v) { store_stream(vy + i * G, v); },
        [&](float v) { a.y[p.scalar_elem()] = from_f32<T>(v); });
    if constexpr (CTA_RSTD) {
      if (p.live && t == 0) a.rstd[row * CLUSTER + rank] = rstd;
    }
  }
}

template <class T, int CLUSTER, int THREADS, int ROWS, int PT, bool RESIDUAL, bool CTA_RSTD, bool PUSH>
__device__ __forceinline__ void rmsnorm(const RmsArgs<T> &a) {
  constexpr int V = VecOf<T>::N;
  static_assert((THREADS / ROWS) % 32 == 0, "every row needs whole warps");
  static_assert(CLUSTER == 1 || ROWS == 1, "a row split across a cluster takes its CTAs whole");
  __shared__ float part[2][THREADS / 32];
  __shared__ typename RmsExchange<CLUSTER, PUSH>::Slots ex;
  RmsExchange<CLUSTER, PUSH>::init(ex);
  const u32 rank = CLUSTER > 1 ? cluster_ctarank() : 0;
  if (a.cols % V == 0 && (((u64)a.x | (u64)a.w) & 15) == 0)
    rmsnorm_rows<T, CLUSTER, THREADS, ROWS, PT, RESIDUAL, CTA_RSTD, PUSH, true>(a, rank, part, ex);
  else
    rmsnorm_rows<T, CLUSTER, THREADS, ROWS, PT, RESIDUAL, CTA_RSTD, PUSH, false>(a, rank, part, ex);
  cluster_retire<CLUSTER>();
}

}  // namespace weft
