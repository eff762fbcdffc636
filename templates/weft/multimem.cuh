// weft/multimem.cuh: the NVLink switch's multicast instructions (multimem.*), on 16-byte
// vectors of a multicast address.  Only reached where the runtime made a multicast object;
// every caller has a unicast twin for machines without one.
#pragma once
#include "weft/types.cuh"

namespace weft {

// The switch's reduction of vector i of the multicast buffer, and its store to every rank.
template <class T, int MOP> __device__ __forceinline__ U4 multimem_ld_reduce(const U4 *p);
template <class T> __device__ __forceinline__ void multimem_st(U4 *p, const U4 &v);
#define WEFT_MM_LDRED(T, MOP, INSTR)                                                              \
  template <> __device__ __forceinline__ U4 multimem_ld_reduce<T, MOP>(const U4 *p) {             \
    U4 v;                                                                                         \
    asm volatile(INSTR " {%0, %1, %2, %3}, [%4];"                                                 \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");             \
    return v;                                                                                     \
  }
enum { MM_ADD = 0, MM_MIN = 1, MM_MAX = 2 };
WEFT_MM_LDRED(f32, MM_ADD, "multimem.ld_reduce.relaxed.sys.global.add.v4.f32")
WEFT_MM_LDRED(bf16, MM_ADD, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2")
WEFT_MM_LDRED(bf16, MM_MIN, "multimem.ld_reduce.relaxed.sys.global.min.v4.bf16x2")
WEFT_MM_LDRED(bf16, MM_MAX, "multimem.ld_reduce.relaxed.sys.global.max.v4.bf16x2")
WEFT_MM_LDRED(f16, MM_ADD, "multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2")
WEFT_MM_LDRED(f16, MM_MIN, "multimem.ld_reduce.relaxed.sys.global.min.v4.f16x2")
WEFT_MM_LDRED(f16, MM_MAX, "multimem.ld_reduce.relaxed.sys.global.max.v4.f16x2")
#undef WEFT_MM_LDRED
#define WEFT_MM_ST(T, TY)                                                                         \
  template <> __device__ __forceinline__ void multimem_st<T>(U4 * p, const U4 &v) {               \
    asm volatile("multimem.st.relaxed.sys.global.v4." TY " [%0], {%1, %2, %3, %4};"              \
                 ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");                   \
  }
WEFT_MM_ST(f32, "f32")
WEFT_MM_ST(bf16, "bf16x2")
WEFT_MM_ST(f16, "f16x2")
#undef WEFT_MM_ST

}  // namespace weft
