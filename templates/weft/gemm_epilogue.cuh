// weft/gemm_epilogue.cuh: a consumer warpgroup's accumulators to C.
//   direct   straight from registers to global memory, bounds-checked (store_tile);
//   tma      through shared memory, swizzled, then stored by TMA, which clips at the tensor's
//            edges (store_tile_tma).  A consumer warpgroup's ROWS x BN tile leaves in 64-column
//            chunks of ROWS x 128 bytes (the 128-byte swizzle its tensor map names, so the 8 rows
//            a store instruction touches land in 8 different 16-byte units: no bank conflicts;
//            a last chunk of BN % 64 columns is dense and unswizzled, with a map of its own),
//            through a buffer per chunk where they fit beside the ring, else through two in
//            turn: one thread stores each chunk with cp.async.bulk.tensor while the warpgroup
//            writes the next into the other buffer.  Two buffers instead of the whole tile
//            leave room for a deeper ring (128 x 256: four stages instead of three); three
//            consumers (192 x 192: four stages) pass their chunks through one buffer each.
// Fragment layout of m64nNk16 (f32): thread t of the warpgroup holds rows 16*(t/32) + (t%32)/4
// (+8) and columns 8*j + 2*(t%4) (+1).
#pragma once
#include "weft/gemm.cuh"
#include "weft/types.cuh"

namespace weft {

// The m64nBNk16 accumulator fragment of a consumer warpgroup's MR x 64 rows: f(r, col, lo, hi)
// for each pair of adjacent columns this thread holds in the 8-column blocks [jlo, jhi) (lo, hi:
// acc[mi][4j + 2h] and the next, as references), at row r of the warpgroup's rows (r <
// rows_valid) and column col (< n: the pair's first column; where n is odd -- any_n -- the pair's
// second may lie past it, and the caller checks).  Unrolled: every index is a constant.
template <int BN, int MR, class Acc, class F>
__device__ __forceinline__ void for_acc_pairs(Acc &acc, long rows_valid, long col0, long n, int jlo, int jhi, F f) {
  const int t = threadIdx.x % 128;
  const int r_in = 16 * (t / 32) + (t % 32) / 4, c_in = 2 * (t % 4);
#pragma unroll
  for (int mi = 0; mi < MR; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long r = mi * 64 + r_in + 8 * h;
      if (r >= rows_valid) continue;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        if (j < jlo || j >= jhi) continue;
        const long col = col0 + 8 * j + c_in;
        if (col >= n) continue;
        f(r, col, acc[mi][4 * j + 2 * h], acc[mi][4 * j + 2 * h + 1]);
      }
    }
  }
}

// The accumulators of rows [r0, r0 + 64*MR) of a tile to C (ldc = n), rows < rows_valid and
// columns < n only.  A column pair is one 32-bit store where n is even.  ANY_N (family gemm with
// column-major B and these stores: N may be odd, gen/families/gemm.lua's limits): an odd n leaves
// every other row's pairs off 4-byte lines, so there one element at a time, the pair's second
// only where it lies inside C.
template <class T, int BN, int MR, bool ANY_N = false>
__device__ __forceinline__ void store_tile(T *c, long n, long row0, long rows_valid, long col0, const float (&acc)[MR][BN / 2]) {
  if (ANY_N && (n & 1)) {
    for_acc_pairs<BN, MR>(acc, rows_valid, col0, n, 0, BN / 8, [&](long r, long col, float lo, float hi) {
      T *p = c + (row0 + r) * n + col;
      p[0] = from_f32<T>(lo);
      if (col + 1 < n) p[1] = from_f32<T>(hi);
    });
    return;
  }
  for_acc_pairs<BN, MR>(acc, rows_valid, col0, n, 0, BN / 8, [&](long r, long col, float lo, float hi) {
    *(u32 *)(c + (row0 + r) * n + col) = pack2<T>(lo, hi);
  });
}

// swap_ab: a consumer warpgroup's accumulators hold C^T -- the fragment's row r is C's column
// n0 + r, its column pair (col, col + 1) C's rows -- stored one element at a time, bounds-checked
// (M may be odd: a pair's second row may lie past it).  Decode's C is a few rows: a warp's 8
// lanes of one row write 16 contiguous bytes.
template <class T, int ACC_N, int MR>
__device__ __forceinline__ void store_tile_swapped(T *c, long m, long n, long m0, long n0, const float (&acc)[MR][ACC_N / 2],
                                                   int jlo = 0, int jhi = ACC_N / 8) {
  for_acc_pairs<ACC_N, MR>(acc, n - n0, m0, m, jlo, jhi, [&](long r, long row, float lo, float hi) {
    c[row * n + n0 + r] = from_f32<T>(lo);
    if (row + 1 < m) c[(row + 1) * n + n0 + r] = from_f32<T>(hi);
  });
}

// One 32-bit store to shared memory by its 32-bit shared-window address: st.shared, not a
// generic store through a 64-bit pointer (a generic pointer makes ptxas emit ST.E and keep
// 64-bit addresses live across the barrier; measured 2 % of a 8192^3 GEMM).
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v));
}
// Four (two) 8 x 8 matrices of 16-bit values to shared memory by the whole warp: register i of
// every lane is its fragment of matrix i -- lane l holds row l / 4, columns 2 * (l % 4) and the
// next, the accumulator fragment's own layout -- and lane 8 * i + r names the 16-byte row r of
// matrix i (.x2: lanes 0-15).  One instruction where st.shared.u32 took four (two).
__device__ __forceinline__ void stmatrix_x4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3));
}
__device__ __forceinline__ void stmatrix_x2(u32 addr, u32 r0, u32 r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1));
}

// bar_id: a named barrier for the 128 threads of this warpgroup.  SHARD: the map is 3-d
// { n, rows of a shard, shard } (the fused kernel: a tile must not spill into the next shard);
// else 2-d { n, m }.  A tile BN columns wide that is not a multiple of 64 (family gemm, B
// column-major) ends in a narrow chunk of W = BN % 64 columns, stored through tct, C's second map
// (box W x ROWS, no swizzle: its rows are W * 2 bytes, dense in the buffer).
// BUFS (gen/core/gemm.lua's layout): a buffer per chunk -- the whole tile is written, then one
// barrier, then thread 0 stores every chunk; or two, taken in turn, with one barrier per chunk:
// before it every thread has written chunk ch (and fenced its writes for the async proxy), and
// thread 0 has seen every store issued so far read its buffer -- that of chunk ch - 1, which is
// chunk ch + 1's; after it, thread 0 stores chunk ch and the warpgroup writes ch + 1; or one,
// with a second barrier per chunk: after thread 0 has seen chunk ch - 1's store read the buffer,
// the warpgroup writes ch.  Every way, the first barrier of a tile covers the last tile's stores.
// ROWS: the warpgroup's rows of the tile, MR * 64, or a thin tile's fewer (the map's box; the
// accumulator rows past them are not C's and are not written).
template <class T, int BN, int MR, int ROWS, bool SHARD, int BUFS, int GROUPS = 1>
__device__ __forceinline__ void store_tile_tma(const TensorMap &tc, const TensorMap *tct, char *stage, int bar_id, int row0,
                                               int shard, int col0, const float (&acc)[MR][BN / 2], int rows_left = 1 << 30) {
  constexpr int CHUNK = ROWS * 128, W = BN % 64, NCH = (BN + 63) / 64;
  constexpr int NQ = GROUPS * NCH;   // chunks in all: each 64-row group's NCH of its own where GROUPS = MR
  static_assert(ROWS % 8 == 0 && ROWS <= MR * 64, "whole 8-row swizzle groups of the accumulators' rows");
  static_assert(GROUPS == 1 || (GROUPS == MR && ROWS == 64 && !SHARD), "a box per 64-row group, or one for all the rows");
  constexpr bool ALL = BUFS == NQ;   // a buffer per chunk
  // where chunk q's buffer starts: with a buffer per chunk, each 64-row group's in turn (GROUPS >
  // 1: its narrow last one dense, ROWS x W elements, as gen/core/gemm.lua's layout() has them);
  // else buffer q % BUFS, each a whole chunk's size
  constexpr int GROUP = CHUNK * (NCH - 1) + (W ? ROWS * W * (int)sizeof(T) : CHUNK);
  static_assert(!ALL || GROUPS == 1 || GROUP % 1024 == 0, "each group's swizzled chunks on the swizzle's 1024 bytes");
  auto buf_off = [](int q) { return ALL ? (q / NCH) * GROUP + (q % NCH) * CHUNK : (q % BUFS) * CHUNK; };
  static_assert(BN % 8 == 0 && W % 8 == 0 && (W == 0 || !SHARD), "64-column chunks, and a narrow last one in family gemm");
  constexpr bool ONE = !ALL && BUFS == 1;   // one buffer: each chunk waits for the last one's store to read it
  static_assert(ALL || BUFS == 2 || ONE, "a buffer per chunk, two in turn, or one");
  const int t = threadIdx.x % 128;
  if (t == 0) bulk_wait_read();   // the last tile's stores have read their buffers
  bar_sync(bar_id, 128);
  const int r_in = 16 * (t / 32) + (t % 32) / 4, c_in = 2 * (t % 4);
  // Every 64-row group whole (every tile but a thin one): stmatrix, whose lane l addresses row
  // l % 8 of matrix l / 8 -- the warp's rows 0-7 (matrices 0, 2) or 8-15 (1, 3) of column group
  // j (0, 1) or j + 1 (2, 3).  A thin tile's ROWS (8, 16, ... 56) may end inside a warp's 16: a
  // 32-bit store per column pair, each row checked.
  constexpr bool STSM = GROUPS > 1 || ROWS == MR * 64;
  const int sm_mat = (t % 32) / 8, sm_row = 16 * (t / 32) + 8 * (sm_mat % 2) + t % 8;
  const u32 base = smem_addr(stage);
  auto narrow = [](int q) { return W != 0 && q % NCH == NCH - 1; };   // a group's last chunk, BN % 64 wide
  auto store = [&](int q) {   // thread 0: chunk q, 64-row group q / NCH's (GROUPS > 1), columns q % NCH's
    const char *src = stage + buf_off(q);
    const int col = col0 + 64 * (q % NCH), row = row0 + (GROUPS > 1 ? 64 * (q / NCH) : 0);
    if constexpr (SHARD) tma_store_3d(tc, col, row, shard, src);
    else tma_store_2d(narrow(q) ? *tct : tc, col, row, src);
  };
#pragma unroll
  for (int q = 0; q < NQ; ++q) {
    const int ch = q % NCH, g = q / NCH;
    // (GROUPS > 1: a 64-row group wholly past C's rows_left is neither written nor stored; the
    // barriers stay, the same for the whole warpgroup)
    const bool live = GROUPS == 1 || 64 * g < rows_left;
    if constexpr (ONE) {
      if (q > 0) {
        if (t == 0) bulk_wait_read();   // chunk q - 1's store has read the buffer
        bar_sync(bar_id, 128);
      }
    }
    const u32 buf = base + (u32)buf_off(q);
    // the byte of 16-byte unit u (of the chunk's 8) in row r of the buffer: swizzled, or a narrow
    // chunk's dense rows
    auto at = [&](int r, int u) { return buf + (u32)(narrow(q) ? r * (2 * W) + 16 * u : r * 128 + (u ^ (r % 8)) * 16); };
    if constexpr (STSM) {
#pragma unroll
      for (int mi = 0; mi < MR; ++mi) {
        if (GROUPS > 1 && (mi != g || !live)) continue;
        const int r = (GROUPS > 1 ? 0 : mi * 64) + sm_row;   // the row this lane addresses
#pragma unroll
        for (int j = 0; j < 8; j += 2) {   // the chunk's 8-column groups, two at a time
          const int J = 8 * ch + j;        // (of the warpgroup's columns)
          if (8 * J >= BN) break;
          const float *a = &acc[mi][4 * J];
          if (8 * (J + 1) < BN)   // groups j, j + 1: rows 0-7 and 8-15 of each
            stmatrix_x4(at(r, j + sm_mat / 2), pack2<T>(a[0], a[1]), pack2<T>(a[2], a[3]), pack2<T>(a[4], a[5]),
                        pack2<T>(a[6], a[7]));
          else   // a narrow chunk's odd last group
            stmatrix_x2(at(r, j), pack2<T>(a[0], a[1]), pack2<T>(a[2], a[3]));
        }
      }
    } else {
#pragma unroll
      for (int mi = 0; mi < MR; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = mi * 64 + r_in + 8 * h;   // the row in the box
          if (r >= ROWS) continue;
#pragma unroll
          for (int j = 0; j < 8; ++j) {   // the chunk's 8-column groups
            if (8 * (8 * ch + j) >= BN) break;
            const float lo = acc[mi][4 * (8 * ch + j) + 2 * h], hi = acc[mi][4 * (8 * ch + j) + 2 * h + 1];
            st_shared_u32(at(r, j) + 2 * c_in, pack2<T>(lo, hi));
          }
        }
    }
    if constexpr (!ALL) {
      fence_proxy_async_shared();
      if (!ONE && t == 0 && q + 1 < NQ) bulk_wait_read();   // chunk q + 1's buffer: q - 1's store read it
      bar_sync(bar_id, 128);
      if (t == 0) {
        if (live) store(q);
        bulk_commit();
      }
    }
  }
  if constexpr (ALL) {
    fence_proxy_async_shared();
    bar_sync(bar_id, 128);
    if (t == 0) {
#pragma unroll
      for (int q = 0; q < NQ; ++q)
        if (GROUPS == 1 || 64 * (q / NCH) < rows_left) store(q);
      bulk_commit();
    }
  }
}

// The tile of consumer warpgroup cw (rows r0.. of shard s, its columns from col0; ROWS of them at
// most, fewer than its accumulators' in a thin tile) by Cfg's epilogue.  COOP_N: each 64-row
// group of the warpgroup's columns leaves in boxes of 64 rows (gen/core/gemm.lua epi_rows).
// Its C stage is cw's, at Cfg::SMEM_EPI + cw * Cfg::SMEM_EPI_STAGE, with barrier
// epilogue_bar(cw).  SHARD: C's map is 3-d (the fused kernel); rows: the rows of a shard.
// tct: C's map for a narrow last chunk (BN not a multiple of 64), else unused.
template <class Cfg, int MR, int ROWS, bool SHARD>
__device__ __forceinline__ void epilogue(typename Cfg::T *c, const TensorMap *tc, const TensorMap *tct, char *smem_base, int cw,
                                         long rows, long n, long r0, int s, int bn, const float (&acc)[MR][Cfg::ACC_N / 2]) {
  const int coff = Cfg::COOP_N ? cw * Cfg::ACC_N : 0;   // (COOP_N: this warpgroup's half of the tile's columns)
  if constexpr (Cfg::EPI_TMA) {
    if (r0 < rows && (long)bn * Cfg::BN + coff < n) {   // (a cluster partner's tile past the edge stores nothing)
      if constexpr (Cfg::COOP_N)
        store_tile_tma<typename Cfg::T, Cfg::ACC_N, MR, 64, SHARD, Cfg::EPI_BUFS, MR>(
            *tc, tct, smem_base + Cfg::SMEM_EPI + cw * Cfg::SMEM_EPI_STAGE, epilogue_bar(cw), (int)r0, s, bn * Cfg::BN + coff,
            acc, rows - r0 < ROWS ? (int)(rows - r0) : ROWS);
      else
        store_tile_tma<typename Cfg::T, Cfg::BN, MR, ROWS, SHARD, Cfg::EPI_BUFS>(
            *tc, tct, smem_base + Cfg::SMEM_EPI + cw * Cfg::SMEM_EPI_STAGE, epilogue_bar(cw), (int)r0, s, bn * Cfg::BN, acc);
    }
  } else {
    store_tile<typename Cfg::T, Cfg::ACC_N, MR, Cfg::ANY_N>(c, n, s * rows + r0, rows - r0 < ROWS ? rows - r0 : ROWS,
                                                           (long)bn * Cfg::BN + coff, acc);
  }
}

// After a warpgroup's last tile: its TMA stores have read their stage before the CTA (and its
// shared memory) goes; the writes themselves complete before the grid does.
template <class Cfg> __device__ __forceinline__ void epilogue_finish() {
  if constexpr (Cfg::EPI_TMA) {
    if (threadIdx.x % 128 == 0) bulk_wait_read();
  }
}

}  // namespace weft
