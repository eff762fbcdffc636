// weft/gemm_streamk.cuh: stream-K's hand-over of partial tiles through global memory (family
// gemm, STREAM_K; weft/gemm_sched.cuh's GemmWalk says who holds which k-blocks of a tile).
//
// The workspace (the runtime's, one per CUDA stream: weft_launch passes it) starts with a
// 256-byte header whose first 8 bytes hold the device address of the context's error page (host
// memory), then STREAMK_MAX_CTAS u32 flags, one per CTA, then one slot per CTA of SLOT bytes: the
// CTA's f32 accumulators, thread t's v-th quad at (v * NT + t) * 16 bytes (coalesced; no layout
// change on either side).
//
// The protocol, for one tile whose k-blocks CTAs o < c1 < ... < cl hold (o, the owner, has
// k-block 0):
//   contributor c   (its first item: the tile's later k-blocks) stores its partial to slot c;
//                   its consumers meet at a named barrier, then one thread st.release.gpu flag[c] = 1
//   owner o         (its last item) one thread polls flag[c] for c = c1 .. cl with
//                   ld.acquire.gpu until 1 and sets it back to 0; then the copy engine brings the
//                   slots into shared memory and every thread adds them, c1 first, to its
//                   accumulators; then it stores the tile
// Each CTA contributes at most once per launch (only its first item can start past k-block 0),
// so a slot is written once and read once; the owner adds the partials in increasing CTA order,
// so the sum's order -- and its bits -- do not depend on timing.  Flags start at zero (the runtime
// zeroes them when it allocates the workspace) and every launch leaves them at zero; launches on
// one stream run one after another (a pdl launch waits before touching the workspace).
// Forward progress: an owner waits only on higher CTAs, at the end of its work, and a contributor
// waits on no one, so CTA P-1 never waits and, with CTAs started in increasing order, every wait
// ends while fewer than all CTAs are co-resident too (MPS).  A wait past STREAMK_TIMEOUT_NS (a
// bug, never a slow peer) writes which CTA waited for which into the error page and traps: the
// hang becomes an error, and the runtime's next call on the context says what it was.  (Not
// printf: a call anywhere in the kernel makes ptxas serialise every WGMMA.)
#pragma once
#include "weft/bulk.cuh"
#include "weft/gemm.cuh"
#include "weft/types.cuh"

namespace weft {

constexpr int STREAMK_MAX_CTAS = 4096;                  // flags (the runtime's grid is capped below it)
constexpr long STREAMK_HEADER = 256;                    // (the runtime's WEFT_WORKSPACE_HEADER)
constexpr long STREAMK_FLAG_BYTES = STREAMK_MAX_CTAS * 4;
constexpr unsigned long long STREAMK_TIMEOUT_NS = 10000000000ull;   // 10 s

__device__ __forceinline__ void st_release_gpu_u32(u32 *p, u32 v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u32 ld_acquire_gpu_u32(const u32 *p) {
  u32 v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_gpu_u32(u32 *p, u32 v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_f4(float *p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void st_volatile_sys_u32(u32 *p, u32 v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u64 streamk_clock() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
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
    if (ct == 0) st_release_gpu_u32(&flags[cta], 1u);
  }

  // the error page's record (words: set, waiting CTA, awaited CTA, row block, column block), then trap
  __device__ __forceinline__ void fault(int cta, int c, int bm, int bn) const {
    u32 *page = *(u32 *const *)base;
    if (page) {
      st_volatile_sys_u32(page + 1, (u32)cta);
      st_volatile_sys_u32(page + 2, (u32)c);
      st_volatile_sys_u32(page + 3, (u32)bm);
      st_volatile_sys_u32(page + 4, (u32)bn);
      __threadfence_system();
      st_volatile_sys_u32(page, 1u);
      __threadfence_system();
    }
    __trap();
  }

  // owner: add the partials of CTAs cta + 1 .. upto that hold any k-blocks (idle(c): none), in
  // that order.  One thread waits for all of their flags, then the copy engine brings the slots
  // into `buf` (the ring's stages, idle once the CTA's last main loop is drained: a tile's owner
  // reaches it last) in pieces of at most half of BUF bytes, two in flight on bar[0] and bar[1]:
  // the consumers add piece p from its half while piece p + 1 lands in the other.  (Loaded into
  // registers the partials came at ~30 KB per L2 round trip: 8-10 us for a tile that four CTAs
  // share, more than the work they saved.)
  template <long BUF, class Idle>
  __device__ __forceinline__ void collect(float (&acc)[MR][N2], int cta, int upto, Idle idle, int bm, int bn, char *buf,
                                          u64 *bar, u32 &phase) const {
    constexpr int NV = MR * N2 / 4;                              // quads per thread
    constexpr long ROW = (long)NT * 16;                          // bytes of one quad index over the threads
    constexpr int VCH = (int)(BUF / 2 / ROW) < NV ? (int)(BUF / 2 / ROW) : NV;   // quads per piece
    static_assert(VCH >= 1, "the ring holds two pieces of at least one quad per thread");
    constexpr int CHUNKS = (NV + VCH - 1) / VCH;
    const int ct = threadIdx.x - 128;
    int n = 0;   // contributors
    for (int c = cta + 1; c <= upto; ++c) n += idle(c) ? 0 : 1;
    const int pieces = n * CHUNKS;
    // piece p: contributor p / CHUNKS (the CTAs in order, idle ones skipped), chunk p % CHUNKS
    auto issue = [&](int p) {
      int c = cta, k = p / CHUNKS;
      do { ++c; } while (idle(c) || k-- > 0);
      const int j = p % CHUNKS, lo = j * VCH, hi = lo + VCH < NV ? lo + VCH : NV;
      const u32 bytes = (u32)((hi - lo) * ROW);
      mbar_arrive_expect(&bar[p & 1], bytes);
      bulk_load(buf + (p & 1) * (BUF / 2 / 16 * 16), (const char *)slot(c) + lo * ROW, bytes, &bar[p & 1]);
    };
    if (ct == 0) {
      const u64 t0 = streamk_clock();
      for (int c = cta + 1; c <= upto; ++c) {
        if (idle(c)) continue;
        while (ld_acquire_gpu_u32(&flags[c]) == 0u)
          if (streamk_clock() - t0 > STREAMK_TIMEOUT_NS) fault(cta, c, bm, bn);
        st_relaxed_gpu_u32(&flags[c], 0u);   // (read once: the next launch starts from zero)
      }
      fence_proxy_async_global();   // the partials, acquired, before the copy engine reads them
    }
    bar_sync(BAR_SPLITK, NT);   // both warpgroups' last WGMMAs, which read the ring, are done
    if (ct == 0)
      for (int p = 0; p < pieces && p < 2; ++p) issue(p);
    for (int p = 0; p < pieces; ++p) {
      const u32 half = (u32)(p & 1);
      mbar_wait(&bar[half], (phase >> half) & 1u);
      phase ^= 1u << half;
      const int lo = (p % CHUNKS) * VCH;
      const u32 src = smem_addr(buf) + half * (u32)(BUF / 2 / 16 * 16) + 16u * (u32)ct;
#pragma unroll
      for (int mi = 0; mi < MR; ++mi)
#pragma unroll
        for (int q = 0; q < N2; q += 4) {
          const int v = (mi * N2 + q) / 4;
          if (v < lo || v >= lo + VCH) continue;
          const float4 x = lds_f4(src + (u32)((v - lo) * ROW));
          acc[mi][q] += x.x; acc[mi][q + 1] += x.y; acc[mi][q + 2] += x.z; acc[mi][q + 3] += x.w;
        }
      bar_sync(BAR_SPLITK, NT);   // every consumer is done with this half
      if (ct == 0 && p + 2 < pieces) issue(p + 2);
    }
  }
};

}  // namespace weft
