// weft/gemm.cuh: the Hopper instructions weft's GEMMs are built from: TMA loads and stores
// (plain and multicast), mbarrier arrivals, named barriers and their ids, register
// reallocation between warpgroups, WGMMA fences and shared-memory descriptors.  The kernel that
// composes them is weft/gemm_kernel.cuh (its opening comment has the design); the ring, main
// loop, epilogues, split-K and tile scheduler each have a header of their own.
#pragma once
#include "weft/bulk.cuh"
#include "weft/cluster.cuh"
#include "weft/types.cuh"

namespace weft {

struct alignas(64) TensorMap { u64 opaque[16]; };   // CUtensorMap, built by the runtime

constexpr int GEMM_BK = 64;   // 16-bit elements of K per stage: one 128-byte swizzle row

__device__ __forceinline__ void prefetch_tmap(const TensorMap &m) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(&m) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void *dst, const TensorMap &m, int c0, int c1, u64 *bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(smem_addr(dst)), "l"(&m), "r"(c0), "r"(c1), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma_load_4d(void *dst, const TensorMap &m, int c0, int c1, int c2, int c3, u64 *bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               ::"r"(smem_addr(dst)), "l"(&m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar)) : "memory");
}
// Multicast: the box lands at dst's offset in every CTA of the cluster named in `mask`, and each
// of them counts the bytes on its own mbarrier at bar's offset.
__device__ __forceinline__ void tma_load_2d_mc(void *dst, const TensorMap &m, int c0, int c1, u64 *bar, u16 mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;"
               ::"r"(smem_addr(dst)), "l"(&m), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "h"(mask) : "memory");
}
__device__ __forceinline__ void tma_load_4d_mc(void *dst, const TensorMap &m, int c0, int c1, int c2, int c3, u64 *bar,
                                               u16 mask) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
               ::"r"(smem_addr(dst)), "l"(&m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar)), "h"(mask)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(u64 *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// Generic-proxy writes (ours, or a peer's we acquired) before async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

// Named barriers: the GEMM kernels' ids, one place for all of them so that no two roles ever
// share one (bar.sync counts arrivals per id: two groups on one id would release each other).
// Each says who syncs on it and with how many threads; id 0 is __syncthreads.
enum GemmBarrier {
  BAR_COMM = 1,           // the 96 threads of warpgroup 0's comm warps 1-3 (ag_gemm: publish, pull; gemm_rs
                          //   reducer = "producer": a tile's flags before its fold)
  BAR_PINGPONG_WG0 = 2,   // pingpong: consumer warpgroup 0 waits (bar.sync) and 1 arrives: 256 threads;
  BAR_PINGPONG_WG1 = 3,   //   tile i's main loop starts after tile i-1's was issued by the other
  BAR_SPLITK = 4,         // split-K: the CONSUMERS * 128 consumer threads of one CTA
  BAR_EPILOGUE_WG0 = 5,   // TMA epilogue: the 128 threads of consumer warpgroup 0 (its C stage) ...
  BAR_EPILOGUE_WG1 = 6,   //   ... and of consumer warpgroup 1
  BAR_CONSUMERS = 7,      // gemm_rs: the CONSUMERS * 128 consumer threads (their DONE signal and the fold)
  BAR_TILE_WG0 = 8,       // gemm_rs fold = "tiles": the 128 threads of consumer warpgroup 0 (a tile's
  BAR_TILE_WG1 = 9,       //   stores before its flag, a flag's wait before the fold) ... and of warpgroup 1
  BAR_EPILOGUE_WG2 = 10,  // TMA epilogue: the 128 threads of consumer warpgroup 2 (family gemm's 192-row tiles)
  BAR_KTURNS_WG0 = 11,    // KTURNS: a tile's sums handed over to consumer warpgroup 0 (both warpgroups wait:
  BAR_KTURNS_WG1 = 12,    //   256 threads) ... and to warpgroup 1 (the next tile's: a barrier per storer)
};
// Consumer warpgroup cw's TMA epilogue barrier (cw = 0, 1, 2).
__device__ __forceinline__ int epilogue_bar(int cw) { return cw < 2 ? BAR_EPILOGUE_WG0 + cw : BAR_EPILOGUE_WG2; }
// True in one lane of the (converged) warp, the same lane every call.
__device__ __forceinline__ bool elect_one() {
  u32 one;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n}" : "=r"(one));
  return one != 0;
}
__device__ __forceinline__ void st_shared_f32(u32 addr, float v) { asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory"); }
__device__ __forceinline__ float ld_shared_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ int bar_or(int id, int n, int v) {
  int r;
  asm volatile("{ .reg .pred p, q; setp.ne.b32 p, %3, 0; barrier.cta.red.or.pred q, %1, %2, p; selp.b32 %0, 1, 0, q; }"
               : "=r"(r) : "r"(id), "r"(n), "r"(v) : "memory");
  return r;
}

// Registers move between warpgroups: the producer needs few, the consumers hold accumulators.
template <int N> __device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N> __device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pin the accumulators: the compiler may not move their uses across a wgmma wait.
__device__ __forceinline__ void fence_reg(float &r) { asm volatile("" : "+f"(r)::"memory"); }

// The shared-memory matrix descriptor (128-byte swizzle): start address, leading and stride
// byte offsets, all in 16-byte units.
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}
// The same with the 64-byte swizzle (layout type 2): row-major B in 32-column boxes.
__device__ __forceinline__ u64 smem_desc_sw64(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (2ull << 62);
}
// The descriptor of the address `bytes` past d's: only the start address field (bits 0-13 of the
// low word, addr >> 4) moves, and it cannot carry out of its 14 bits while the address stays in
// shared memory (below 2^18), so one 32-bit add on the low word.  A k-block's descriptors (4 x MR
// of A, 4 of B) are two built ones plus constants (built each, they cost the consumer warps four
// instructions apiece: the add, mask, shift and or).
__device__ __forceinline__ u64 smem_desc_add(u64 d, u32 bytes) {
  const u32 lo = (u32)d + (bytes >> 4), hi = (u32)(d >> 32);
  return (u64)lo | ((u64)hi << 32);
}

// TMA stores from shared memory (the TMA epilogue, weft/gemm_epilogue.cuh), in bulk groups.
__device__ __forceinline__ void tma_store_2d(const TensorMap &m, int c0, int c1, const void *src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"(&m), "r"(c0), "r"(c1), "r"(smem_addr(src)) : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TensorMap &m, int c0, int c1, int c2, const void *src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
               ::"l"(&m), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src)) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Generic-proxy writes to shared memory before async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

}  // namespace weft
