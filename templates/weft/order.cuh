// weft/order.cuh: loads and stores with a memory order and scope (the PTX memory model), and the
// global nanosecond timer that bounds every wait.  .sys: signals between ranks (weft/signal.cuh),
// whose peers may be other GPUs; .gpu: hand-overs between the blocks of one grid (stream-K's
// partial tiles, weft/gemm_streamk.cuh).
#pragma once
#include "weft/types.cuh"

namespace weft {

// name(p, v): one store of the instruction `op`; name(p): one load.  The "memory" clobber keeps
// the compiler from moving other memory accesses across them.
#define WEFT_ORDERED_ST(name, op, T, reg)                                                          \
  __device__ __forceinline__ void name(T *p, T v) { asm volatile(op " [%0], %1;" ::"l"(p), reg(v) : "memory"); }
#define WEFT_ORDERED_LD(name, op, T, reg)                                                          \
  __device__ __forceinline__ T name(const T *p) {                                                  \
    T v;                                                                                           \
    asm volatile(op " %0, [%1];" : "=" reg(v) : "l"(p) : "memory");                                \
    return v;                                                                                      \
  }
WEFT_ORDERED_ST(st_release_sys, "st.release.sys.global.u64", u64, "l")
WEFT_ORDERED_LD(ld_acquire_sys, "ld.acquire.sys.global.u64", u64, "l")
WEFT_ORDERED_ST(st_relaxed_sys, "st.relaxed.sys.global.u64", u64, "l")
WEFT_ORDERED_LD(ld_relaxed_sys, "ld.relaxed.sys.global.u64", u64, "l")
WEFT_ORDERED_ST(st_release_gpu_u32, "st.release.gpu.global.u32", u32, "r")
WEFT_ORDERED_LD(ld_acquire_gpu_u32, "ld.acquire.gpu.global.u32", u32, "r")
WEFT_ORDERED_ST(st_relaxed_gpu_u32, "st.relaxed.gpu.global.u32", u32, "r")
WEFT_ORDERED_ST(st_volatile_u32, "st.volatile.global.u32", u32, "r")
#undef WEFT_ORDERED_ST
#undef WEFT_ORDERED_LD

template <bool ACQUIRE> __device__ __forceinline__ u64 ld_sys(const u64 *p) {
  return ACQUIRE ? ld_acquire_sys(p) : ld_relaxed_sys(p);
}
__device__ __forceinline__ u32 ld_volatile(const u32 *p) { return *(const volatile u32 *)p; }
__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace weft
