// weft/bulk.cuh: the bulk copy engine (TMA, non-tensor form) and mbarriers.
// cp.async.bulk moves a contiguous run of 16-byte-aligned bytes from global memory into shared
// memory without occupying threads; completion is counted in bytes on an mbarrier
// (complete_tx), which threads wait on by phase parity.
#pragma once
#include "weft/types.cuh"

namespace weft {

__device__ __forceinline__ u32 smem_addr(const void *p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

__device__ __forceinline__ void mbar_init(u64 *bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}
// Make initialised barriers visible to the async proxy (the copy engine) before first use.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
}
// Arrive once and announce `bytes` of transactions this phase will receive.
__device__ __forceinline__ void mbar_arrive_expect(u64 *bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Wait for the phase of `parity` to complete.  CLUSTER: its arrivals came with release from other
// CTAs of the cluster, so the wait acquires at cluster scope (the default is the CTA's).
template <bool CLUSTER = false> __device__ __forceinline__ void mbar_wait(u64 *bar, u32 parity) {
  if constexpr (CLUSTER)
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WEFT_WAITC_%=:\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WEFT_WAITC_%=;\n}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
  else
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WEFT_WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WEFT_WAIT_%=;\n}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
// Copy bytes (a multiple of 16; both addresses 16-byte aligned) global -> shared, counted on bar.
__device__ __forceinline__ void bulk_load(void *dst, const void *src, u32 bytes, u64 *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ U4 lds128(const U4 *p) {
  U4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(smem_addr(p)));
  return v;
}

// 16 bytes of this CTA's shared memory as floats (by shared address).
__device__ __forceinline__ float4 lds_f4(u32 addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}

}  // namespace weft
