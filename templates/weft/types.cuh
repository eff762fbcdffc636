// weft/types.cuh: element types, conversions and 16-byte memory access, with no CUDA headers
// (NVRTC compiles weft sources with no include path, which keeps a compile well under 1 s).
#pragma once

namespace weft {

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32;

// Storage types for the 16-bit formats; arithmetic is always in f32.
struct f16 { u16 bits; };
struct bf16 { u16 bits; };
// OCP FP8 E4M3 (e4m3fn: no infinities, +-448 the largest finite, 0x7f / 0xff NaN): an output format only
struct fp8e4m3 { unsigned char bits; };

// Two f32 values as E4M3 codes, rounded to nearest even and saturated to +-448 (NaN stays NaN):
// lo in the low byte.
__device__ __forceinline__ u32 e4m3x2(float lo, float hi) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

struct __align__(16) U4 { u32 x, y, z, w; };   // one 16-byte access

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __uint_as_float((u32)x.bits << 16); }
__device__ __forceinline__ float to_f32(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f32<bf16>(float x) {
  bf16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}
template <> __device__ __forceinline__ f16 from_f32<f16>(float x) {
  f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

// Elements of T in one 16-byte vector.
template <class T> struct VecOf { static constexpr int N = 16 / (int)sizeof(T); };

// Element i of a 16-byte vector holding T, as f32.
template <class T> __device__ __forceinline__ float lane_f32(const U4 &v, int i);
template <> __device__ __forceinline__ float lane_f32<f32>(const U4 &v, int i) {
  return __uint_as_float(i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w);
}
template <> __device__ __forceinline__ float lane_f32<bf16>(const U4 &v, int i) {
  u32 w = (i >> 1) == 0 ? v.x : (i >> 1) == 1 ? v.y : (i >> 1) == 2 ? v.z : v.w;
  bf16 h; h.bits = (u16)((i & 1) ? (w >> 16) : (w & 0xffff));
  return to_f32(h);
}
template <> __device__ __forceinline__ float lane_f32<f16>(const U4 &v, int i) {
  u32 w = (i >> 1) == 0 ? v.x : (i >> 1) == 1 ? v.y : (i >> 1) == 2 ? v.z : v.w;
  f16 h; h.bits = (u16)((i & 1) ? (w >> 16) : (w & 0xffff));
  return to_f32(h);
}

// Pack f32 values into one 16-byte vector of T.
template <class T> __device__ __forceinline__ U4 pack_f32(const float *f);
template <> __device__ __forceinline__ U4 pack_f32<f32>(const float *f) {
  U4 v; v.x = __float_as_uint(f[0]); v.y = __float_as_uint(f[1]);
  v.z = __float_as_uint(f[2]); v.w = __float_as_uint(f[3]);
  return v;
}
// Two f32 -> one word of two 16-bit values, one instruction (cvt ... x2 packs hi, lo).
template <class H> __device__ __forceinline__ u32 pack2(float lo, float hi);
template <> __device__ __forceinline__ u32 pack2<bf16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ u32 pack2<f16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ U4 pack_f32<bf16>(const float *f) {
  U4 v; v.x = pack2<bf16>(f[0], f[1]); v.y = pack2<bf16>(f[2], f[3]);
  v.z = pack2<bf16>(f[4], f[5]); v.w = pack2<bf16>(f[6], f[7]);
  return v;
}
template <> __device__ __forceinline__ U4 pack_f32<f16>(const float *f) {
  U4 v; v.x = pack2<f16>(f[0], f[1]); v.y = pack2<f16>(f[2], f[3]);
  v.z = pack2<f16>(f[4], f[5]); v.w = pack2<f16>(f[6], f[7]);
  return v;
}

// Running maximum over 16-byte vectors.  For the 16-bit formats it runs on packed pairs
// (max.bf16x2 / max.f16x2: half the instructions of unpacking first); max is exact in any
// format, and like fmaxf it ignores a NaN operand.
template <class T> struct VecMax {
  float m;
  __device__ __forceinline__ VecMax(float init) : m(init) {}
  __device__ __forceinline__ void add(const U4 &v) {
    m = fmaxf(m, fmaxf(fmaxf(lane_f32<T>(v, 0), lane_f32<T>(v, 1)), fmaxf(lane_f32<T>(v, 2), lane_f32<T>(v, 3))));
  }
  __device__ __forceinline__ float result() const { return m; }
};
template <class H> struct VecMax2 {
  float m;
  u32 w;
  __device__ __forceinline__ VecMax2(float init) : m(init), w(neg_inf_pair()) {}
  __device__ __forceinline__ static u32 neg_inf_pair();
  __device__ __forceinline__ static u32 max2(u32 a, u32 b);
  __device__ __forceinline__ void add(const U4 &v) { w = max2(w, max2(max2(v.x, v.y), max2(v.z, v.w))); }
  __device__ __forceinline__ float result() const {
    H lo, hi;
    lo.bits = (u16)(w & 0xffff);
    hi.bits = (u16)(w >> 16);
    return fmaxf(m, fmaxf(to_f32(lo), to_f32(hi)));
  }
};
template <> __device__ __forceinline__ u32 VecMax2<bf16>::neg_inf_pair() { return 0xff80ff80u; }
template <> __device__ __forceinline__ u32 VecMax2<f16>::neg_inf_pair() { return 0xfc00fc00u; }
template <> __device__ __forceinline__ u32 VecMax2<bf16>::max2(u32 a, u32 b) {
  u32 r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
template <> __device__ __forceinline__ u32 VecMax2<f16>::max2(u32 a, u32 b) {
  u32 r;
  asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
template <> struct VecMax<bf16> : VecMax2<bf16> { using VecMax2<bf16>::VecMax2; };
template <> struct VecMax<f16> : VecMax2<f16> { using VecMax2<f16>::VecMax2; };

// Data read once: through the non-coherent path, not kept in L1.
__device__ __forceinline__ U4 load_stream(const U4 *p) {
  U4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// Data read twice (the second read should hit L2): plain cached load.
__device__ __forceinline__ U4 load_keep(const U4 *p) {
  U4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// Data read once that this kernel overwrites later (rmsnorm's residual r): the coherent path
// (ld.global.nc is for data read-only for the whole kernel), not kept in L1.
__device__ __forceinline__ U4 load_once(const U4 *p) {
  U4 v;
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// Results written once and not read again by this kernel: streaming store.
__device__ __forceinline__ void store_stream(U4 *p, const U4 &v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// A row of n elements of T at p, split for 16-byte access: `head` scalars up to the first
// 16-byte boundary, `nvec` vectors, `tail` scalars.  Rows of any length and any start
// (aligned to sizeof(T)) work; only the vector part is fast, and it is nearly everything.
template <class T> struct RowSplit {
  long head, nvec, tail;
  __device__ __forceinline__ RowSplit(const T *p, long n) {
    constexpr int V = VecOf<T>::N;
    long mis = (long)(((u64)p & 15) / sizeof(T));
    head = mis ? (V - mis < n ? V - mis : n) : 0;
    nvec = (n - head) / V;
    tail = n - head - nvec * V;
  }
  // index of scalar k (0 <= k < head + tail) within the row
  __device__ __forceinline__ long scalar_index(long k) const {
    constexpr int V = VecOf<T>::N;
    return k < head ? k : head + nvec * V + (k - head);
  }
};

}  // namespace weft
