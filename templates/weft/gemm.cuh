// weft/gemm.cuh: a persistent, warp-specialised Hopper GEMM: TMA fills a `STAGES`-deep ring of
// shared-memory tiles, WGMMA warpgroups consume it.  C[M,N] = A[M,K] . B (f32 accumulation).
//
// Roles (one CTA per SM, persistent over output tiles):
//   warpgroup 0   producer.  Lane 0 of warp 0 issues the TMA loads of every (tile, k-block) into
//                 stage s, announcing the bytes on full[s]; it first waits on empty[s], which the
//                 consumers arrive on once their WGMMAs that read stage s have completed.  Warps
//                 1-3 are free for communication (ag_gemm's publish/pull), given to the caller.
//   warpgroups 1..CONSUMERS  consumers.  Each owns BM / CONSUMERS rows of the tile and issues
//                 m64nBNk16 WGMMAs straight from shared memory, keeps one group in flight, and
//                 stores its f32 accumulators to C (rounded to the output type) with bounds
//                 checks, while the producer already fills the ring for the next tile.
// Shared memory: A stage = BM rows x 128 bytes (64 16-bit elements of K), B stage = BN x 128
// bytes, both in the 128-byte swizzle TMA writes and WGMMA reads (1024-byte aligned stages).
// B row-major (K x N, N contiguous) arrives as BN/64 boxes of 64 k-rows x 128 bytes and is read
// MN-major (the transpose bit); B column-major (N x K) is read K-major like A.
// Out-of-bounds rows and columns of a box read as zero (the tensor maps say so), which makes
// M, N and K that are not tile multiples correct without masks in the main loop.
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

// Barriers among some warps of the CTA (id 0 is __syncthreads).
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

// Linear index t of a tile -> (row block, column block), in groups of G row blocks so that a
// wave of CTAs shares rows of A and columns of B in L2.
// (Unsigned: every value is >= 0, and an unsigned division is half the instructions of a signed
// one; the producer divides before its first load, which nothing else hides.)
__device__ __forceinline__ void raster(int t, int mt, int nt, int G, int &bm, int &bn) {
  const unsigned per_group = (unsigned)(G * nt);
  const unsigned g = (unsigned)t / per_group, first = g * (unsigned)G;
  const unsigned rows = min((unsigned)G, (unsigned)mt - first);
  const unsigned in = (unsigned)t - g * per_group, q = in / rows;
  bm = (int)(first + in - q * rows);
  bn = (int)q;
}

// The ring: stage buffers and their barriers, carved from dynamic shared memory.
template <int BM, int BN, int STAGES> struct Ring {
  static constexpr u32 A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  char *base;      // 1024-byte aligned
  u64 *full, *empty;
  __device__ __forceinline__ char *a(int s) const { return base + s * STAGE_BYTES; }
  __device__ __forceinline__ char *b(int s) const { return base + s * STAGE_BYTES + A_BYTES; }
  __device__ __forceinline__ void carve(char *smem) {
    base = (char *)(((unsigned long long)smem + 1023) & ~1023ull);
    full = (u64 *)(base + STAGES * STAGE_BYTES);
    empty = full + STAGES;
  }
};

// Stage/phase bookkeeping shared by producer and consumers (each keeps its own copy).
template <int STAGES> struct Pipe {
  int s = 0;
  u32 phase = 0;
  __device__ __forceinline__ void next() {
    if (++s == STAGES) { s = 0; phase ^= 1; }
  }
  __device__ __forceinline__ void skip(int n) {   // n stages further on (another reader's)
    const int to = s + n;
    s = to % STAGES;
    phase ^= (u32)(to / STAGES) & 1;
  }
};

// Loads of one k-block of B into stage s (A is the caller's: it knows where shards live).
// CM > 1: the CM CTAs of a cluster along M share this B tile; CTA `crank` loads its part and
// multicasts it to all of them (row-major B: every CM-th 64-column box; column-major B: the
// crank-th BN/CM rows of the box, whose tensor map box is BN/CM tall).
template <int BN, bool B_ROW, int CM>
__device__ __forceinline__ void load_b(char *dst, const TensorMap &tb, int kb, int n0, u64 *bar, int crank) {
  constexpr u16 ALL = (u16)((1u << CM) - 1);
  if constexpr (B_ROW) {
#pragma unroll
    for (int j = 0; j < BN / 64; ++j) {
      if constexpr (CM == 1) tma_load_2d(dst + j * 8192, tb, n0 + 64 * j, kb * GEMM_BK, bar);
      else if (j % CM == crank) tma_load_2d_mc(dst + j * 8192, tb, n0 + 64 * j, kb * GEMM_BK, bar, ALL);
    }
  } else {
    if constexpr (CM == 1) tma_load_2d(dst, tb, kb * GEMM_BK, n0, bar);
    else tma_load_2d_mc(dst + crank * (BN / CM) * 128, tb, kb * GEMM_BK, n0 + crank * (BN / CM), bar, ALL);
  }
}

// One k-block (4 steps of k16) of a consumer warpgroup: MR row groups of 64, BN columns.
// WG is provided by the family's rendered code: the wgmma instruction for this BN and dtype.
template <int BM, int BN, int MR, bool B_ROW, class WG>
__device__ __forceinline__ void consume_kblock(float (&acc)[MR][BN / 2], u32 a_stage, u32 b_stage, int wg_row0, bool first) {
#pragma unroll
  for (int kk = 0; kk < GEMM_BK / 16; ++kk) {
    // B: K-major advances 32 bytes along the swizzled row; MN-major advances 16 k-rows.
    const u64 db = B_ROW ? smem_desc(b_stage + kk * 2048, 8192, 1024) : smem_desc(b_stage + kk * 32, 16, 1024);
#pragma unroll
    for (int mi = 0; mi < MR; ++mi) {
      const u64 da = smem_desc(a_stage + (wg_row0 + mi * 64) * 128 + kk * 32, 16, 1024);
      WG::mma(acc[mi], da, db, (first && kk == 0) ? 0 : 1);
    }
  }
}

// The accumulators of rows [r0, r0 + 64*MR) of a tile to C (ldc = n), rows < rows_valid and
// columns < n only.  Fragment layout of m64nNk16 (f32): thread t of the warpgroup holds rows
// 16*(t/32) + (t%32)/4 (+8) and columns 8*j + 2*(t%4) (+1).
template <class T, int BN, int MR>
__device__ __forceinline__ void store_tile(T *c, long n, long row0, long rows_valid, long col0, const float (&acc)[MR][BN / 2]) {
  const int t = threadIdx.x % 128;
  const int r_in = 16 * (t / 32) + (t % 32) / 4, c_in = 2 * (t % 4);
#pragma unroll
  for (int mi = 0; mi < MR; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long r = mi * 64 + r_in + 8 * h;
      if (r >= rows_valid) continue;
      T *row = c + (row0 + r) * n;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const long col = col0 + 8 * j + c_in;
        if (col >= n) continue;   // n is even (a multiple of 8): the pair is whole
        *(u32 *)(row + col) = pack2<T>(acc[mi][4 * j + 2 * h], acc[mi][4 * j + 2 * h + 1]);
      }
    }
  }
}

// ---- the TMA-store epilogue: C through shared memory ---------------------------------------
// A consumer warpgroup writes its ROWS x BN tile of C into `stage` (BN/64 chunks of ROWS x 128
// bytes, in the 128-byte swizzle its tensor map names, so the 8 rows a store instruction touches
// land in 8 different 16-byte units: no bank conflicts), then one thread stores each chunk with
// cp.async.bulk.tensor, which clips at the tensor's edges (no bounds checks here).  The stage is
// rewritten only after the previous tile's stores have read it (wait_group.read at the start).
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

// bar_id: a named barrier for the 128 threads of this warpgroup.  SHARD: the map is 3-d
// { n, rows of a shard, shard } (the fused kernel: a tile must not spill into the next shard);
// else 2-d { n, m }.
template <class T, int BN, int MR, bool SHARD>
__device__ __forceinline__ void store_tile_tma(const TensorMap &tc, char *stage, int bar_id, int row0, int shard, int col0,
                                               const float (&acc)[MR][BN / 2]) {
  constexpr int ROWS = MR * 64, CHUNK = ROWS * 128;
  const int t = threadIdx.x % 128;
  if (t == 0) bulk_wait_read();   // the last tile's stores have read the stage
  bar_sync(bar_id, 128);
  const int r_in = 16 * (t / 32) + (t % 32) / 4, c_in = 2 * (t % 4);
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mi * 64 + r_in + 8 * h;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int col = 8 * j + c_in;
        char *chunk = stage + (col / 64) * CHUNK;
        const int unit = ((col % 64) / 8) ^ (r % 8);
        *(u32 *)(chunk + r * 128 + unit * 16 + 2 * (col % 8)) = pack2<T>(acc[mi][4 * j + 2 * h], acc[mi][4 * j + 2 * h + 1]);
      }
    }
  fence_proxy_async_shared();
  bar_sync(bar_id, 128);
  if (t == 0) {
#pragma unroll
    for (int ch = 0; ch < BN / 64; ++ch) {
      if constexpr (SHARD) tma_store_3d(tc, col0 + 64 * ch, row0, shard, stage + ch * CHUNK);
      else tma_store_2d(tc, col0 + 64 * ch, row0, stage + ch * CHUNK);
    }
    bulk_commit();
  }
}

}  // namespace weft
