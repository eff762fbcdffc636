// weft/gemm_streamk.cuh: stream-K's hand-over of partial tiles through global memory (family
// gemm, STREAM_K; weft/gemm_sched.cuh's GemmWalk says who holds which k-blocks of a tile).
//
// The workspace (the runtime's, one per CUDA stream: weft_launch passes it) starts with a
// 256-byte header, u64 words: [0] the device address of the context's error page (host memory),
// [1] the wait's timeout in ns (0: STREAMK_TIMEOUT_NS), [2] fault injection for tests, CTA + 1
// that never raises its flag (0: none; WEFT_FAULT=streamk_mute:CTA), [3] zero until a wait times
// out: the first to time out claims it and alone writes the error page (several owners may wait
// at once, and their records would interleave); then STREAMK_MAX_CTAS u32
// flags, one per CTA, then one slot per CTA of SLOT bytes: the CTA's f32 accumulators, thread t's
// v-th quad at (v * NT + t) * 16 bytes (coalesced; no layout change on either side).
//
// The protocol, for one tile whose k-blocks CTAs o < c1 < ... < cl hold (o, the owner, has
// k-block 0):
//   contributor c   (its first item: the tile's later k-blocks) stores its partial to slot c;
//                   its consumers meet at a named barrier, then one thread st.release.gpu flag[c] = 1
//   owner o         (its last item) for c = c1 .. cl in order: one thread polls flag[c] with
//                   ld.acquire.gpu until 1 and sets it back to 0; a named barrier; every thread
//                   adds slot c (ld.global.cg: from L2) to its accumulators; then stores the tile
// Each CTA contributes at most once per launch (only its first item can start past k-block 0),
// so a slot is written once and read once; the owner adds the partials in increasing CTA order,
// so the sum's order -- and its bits -- do not depend on timing.  Flags start at zero (the runtime
// zeroes them when it allocates the workspace) and every launch leaves them at zero; launches on
// one stream run one after another (a pdl launch waits before touching the workspace).
// Forward progress: an owner waits only on higher CTAs, at the end of its work, and a contributor
// waits on no one, so CTA P-1 never waits and, with CTAs started in increasing order, every wait
// ends while fewer than all CTAs are co-resident too (MPS), as long as a few CTAs can run.  A
// wait past its timeout (60 s, or $WEFT_SIGNAL_TIMEOUT_MS) writes which CTA waited for which into the error page and traps:
// the hang becomes an error, and the runtime's next launch on the context says what it was.  A
// contributor keeps an owner waiting only while it cannot start (other kernels holding nearly
// every SM, a debugger stopping the GPU) or if weft has a bug, hence the long timeout.  (Not
// printf: a call anywhere in the kernel makes ptxas serialise every WGMMA.)
#pragma once
#include "weft/gemm.cuh"
#include "weft/order.cuh"
#include "weft/types.cuh"

namespace weft {

constexpr int STREAMK_MAX_CTAS = 4096;                  // flags (the runtime's grid is capped below it)
constexpr long STREAMK_HEADER = 256;                    // (the runtime's WEFT_WORKSPACE_HEADER)
constexpr long STREAMK_FLAG_BYTES = STREAMK_MAX_CTAS * 4;
constexpr unsigned long long STREAMK_TIMEOUT_NS = 60000000000ull;   // 60 s

__device__ __forceinline__ float4 ld_cg_f4(const float *p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_f4(float *p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// The hand-over for consumers of NT threads (their thread index ct = threadIdx.x - 128) holding
// acc[MR][N2] each.
template <int MR, int N2, int NT> struct StreamK {
  static constexpr long SLOT = (long)NT * MR * N2 * 4;
  u32 *flags;
  float *slots;
  char *base;
  __device__ __forceinline__ explicit StreamK(void *ws)
      : flags((u32 *)((char *)ws + STREAMK_HEADER)), slots((float *)((char *)ws + STREAMK_HEADER + STREAMK_FLAG_BYTES)),
        base((char *)ws) {}
  __device__ __forceinline__ float *slot(int cta) const { return slots + (long)cta * (SLOT / 4); }

  // contributor: this CTA's partial of a tile it does not own
  __device__ __forceinline__ void publish(const float (&acc)[MR][N2], int cta) const {
    const int ct = threadIdx.x - 128;
    float *s = slot(cta) + 4 * ct;
#pragma unroll
    for (int mi = 0; mi < MR; ++mi)
#pragma unroll
      for (int q = 0; q < N2; q += 4)
        st_f4(s + (long)((mi * N2 + q) / 4) * NT * 4, acc[mi][q], acc[mi][q + 1], acc[mi][q + 2], acc[mi][q + 3]);
    bar_sync(BAR_SPLITK, NT);   // every consumer's stores, then one release (cumulative over them)
    if (ct == 0 && ((const u64 *)base)[2] != (u64)cta + 1) st_release_gpu_u32(&flags[cta], 1u);
  }

  // the error page's record (words: set, waiting CTA, awaited CTA, row block, column block), by the
  // first CTA to time out (header word 3), then trap
  __device__ __forceinline__ void fault(int cta, int c, int bm, int bn) const {
    u32 *page = *(u32 *const *)base;
    if (page && atomicCAS((unsigned long long *)base + 3, 0ull, 1ull) == 0ull) {
      st_volatile_u32(page + 1, (u32)cta);
      st_volatile_u32(page + 2, (u32)c);
      st_volatile_u32(page + 3, (u32)bm);
      st_volatile_u32(page + 4, (u32)bn);
      __threadfence_system();
      st_volatile_u32(page, 1u);
      __threadfence_system();
    }
    __trap();
  }

  // owner: add the partials of CTAs cta + 1 .. upto that hold any k-blocks (idle(c): none)
  template <class Idle>
  __device__ __forceinline__ void collect(float (&acc)[MR][N2], int cta, int upto, Idle idle, int bm, int bn) const {
    const int ct = threadIdx.x - 128;
    for (int c = cta + 1; c <= upto; ++c) {
      if (idle(c)) continue;
      if (ct == 0) {
        const u64 t0 = globaltimer(), set = ((const u64 *)base)[1], limit = set ? set : STREAMK_TIMEOUT_NS;
        while (ld_acquire_gpu_u32(&flags[c]) == 0u) {
          if (globaltimer() - t0 > limit) fault(cta, c, bm, bn);
        }
        st_relaxed_gpu_u32(&flags[c], 0u);   // (read once: the next launch starts from zero)
      }
      bar_sync(BAR_SPLITK, NT);
      const float *s = slot(c) + 4 * ct;
#pragma unroll
      for (int mi = 0; mi < MR; ++mi)
#pragma unroll
        for (int q = 0; q < N2; q += 4) {
          const float4 v = ld_cg_f4(s + (long)((mi * N2 + q) / 4) * NT * 4);
          acc[mi][q] += v.x; acc[mi][q + 1] += v.y; acc[mi][q + 2] += v.z; acc[mi][q + 3] += v.w;
        }
    }
  }
};

}  // namespace weft
