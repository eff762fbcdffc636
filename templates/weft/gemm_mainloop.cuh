// weft/gemm_mainloop.cuh: a consumer warpgroup's WGMMA main loop over one tile, and the loads
// of B that feed it.  B row-major (K x N, N contiguous) arrives as BN/64 boxes of 64 k-rows x
// 128 bytes and is read MN-major (the transpose bit); B column-major (N x K) is read K-major
// like A.  Out-of-bounds rows and columns of a box read as zero (the tensor maps say so), which
// makes M, N and K that are not tile multiples correct without masks in the loop.
#pragma once
#include "weft/gemm.cuh"
#include "weft/gemm_ring.cuh"

namespace weft {

// Loads of one k-block of B into stage s (A is the caller's: it knows where shards live).
// CM > 1: the CM CTAs of a cluster along M share this B tile; the one holding `part` of them loads
// its part and multicasts it to all of them (`mask`: their ranks in the cluster; row-major B:
// every CM-th 64-column box; column-major B: the part-th BN/CM rows of the box, whose tensor map
// box is BN/CM tall).
// SW64: row-major B in boxes of 32 columns (64 k-rows x 64 bytes, the 64-byte swizzle), so that
// each half of a cooperative_n tile of 192 is whole boxes.
template <int BN, bool B_ROW, int CM, bool SW64 = false>
__device__ __forceinline__ void load_b(char *dst, const TensorMap &tb, int kb, int n0, u64 *bar, int part, u16 mask) {
  if constexpr (B_ROW) {
    constexpr int BOX = SW64 ? 32 : 64;   // columns per box: BOX x 2 bytes by 64 k-rows
#pragma unroll
    for (int j = 0; j < BN / BOX; ++j) {
      if constexpr (CM == 1) tma_load_2d(dst + j * BOX * 128, tb, n0 + BOX * j, kb * GEMM_BK, bar);
      else if (j % CM == part) tma_load_2d_mc(dst + j * BOX * 128, tb, n0 + BOX * j, kb * GEMM_BK, bar, mask);
    }
  } else {
    if constexpr (CM == 1) tma_load_2d(dst, tb, kb * GEMM_BK, n0, bar);
    else tma_load_2d_mc(dst + part * (BN / CM) * 128, tb, kb * GEMM_BK, n0 + part * (BN / CM), bar, mask);
  }
}

// One k-block (4 steps of k16) of a consumer warpgroup: MR row groups of 64, ACC_N columns.
// Cfg::Wgmma is rendered by the family: the wgmma instruction for ACC_N and the dtype.  The
// WGMMA's A operand (its 64-row groups) is the stage's A tile, and its B operand (n = ACC_N) the
// B tile; swapped (Cfg::SWAP), the other way round: B's rows in 64-row groups, A's rows as n.
template <class Cfg, int MR>
__device__ __forceinline__ void consume_kblock(float (&acc)[MR][Cfg::ACC_N / 2], u32 a_stage, u32 b_stage, int wg_row0,
                                               bool first) {
  const u32 ga = Cfg::SWAP ? b_stage : a_stage, gb = Cfg::SWAP ? a_stage : b_stage;
  // the B operand: K-major advances 32 bytes along the swizzled row; MN-major advances 16 k-rows
  // (the next box along N 8192 bytes on, the next 8 k-rows 1024; with the 64-byte swizzle boxes
  // of 32 columns: 4096 and 512)
  const u64 db0 = Cfg::B_SW64 ? smem_desc_sw64(gb, 4096, 512) : Cfg::B_ROW ? smem_desc(gb, 8192, 1024) : smem_desc(gb, 16, 1024);
  constexpr u32 DB_K = Cfg::B_SW64 ? 1024 : Cfg::B_ROW ? 2048 : 32;   // bytes per k16 step
  const u64 da0 = smem_desc(ga + wg_row0 * 128, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < GEMM_BK / 16; ++kk) {
    const u64 db = smem_desc_add(db0, kk * DB_K);
#pragma unroll
    for (int mi = 0; mi < MR; ++mi) {
      const u64 da = smem_desc_add(da0, mi * 64 * 128 + kk * 32);
      Cfg::Wgmma::mma(acc[mi], da, db, (first && kk == 0) ? 0 : 1);
    }
  }
}

template <int MR, int N> __device__ __forceinline__ void zero_acc(float (&acc)[MR][N]) {
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int q = 0; q < N; ++q) acc[mi][q] = 0.f;
}

// The k-blocks kb0, kb0 + STEP, ... below kb1 of one tile into acc (rows row0 .. row0 + 64 * MR
// of the stage's A tile; swapped, of its B tile; the B operand b_off bytes into the stage's B tile:
// COOP_N's columns); p is at kb0's stage and moves STEP stages per
// k-block (STEP 2: KTURNS, this warpgroup's turns, the other's stages between them).
// One group of WGMMAs stays in flight: once k-block kb's are issued, the previous one's are
// waited for and its stage released (release(stage): the caller's arrivals on empty[]).
// Returns the stage still in flight (-1: none), which mainloop_drain releases.
template <class Cfg, int MR, int STEP = 1, class Release>
__device__ __forceinline__ int mainloop(float (&acc)[MR][Cfg::ACC_N / 2], const Ring<Cfg> &ring, Pipe<Cfg::STAGES> &p, int kb0,
                                        int kb1, int row0, Release release, u32 b_off = 0) {
  static_assert(STEP == 1 || STEP == 2, "every k-block, or every other one");
  int prev = -1;
  for (int kb = kb0; kb < kb1; kb += STEP) {
    mbar_wait(&ring.full[p.s], p.phase);
    wgmma_fence();   // every k-block: with it only before a tile's first, ptxas serialised
                     // the WGMMAs (C7520): 1.1-1.3x slower (bench/RESULTS.md)
    consume_kblock<Cfg, MR>(acc, smem_addr(ring.a(p.s)), smem_addr(ring.b(p.s)) + b_off, row0, kb == kb0);
    wgmma_commit();
    wgmma_wait<1>();   // the previous k-block's WGMMAs are done: its stage may be refilled
    if (kb > kb0) release(prev);
    prev = p.s;
    p.next();
    if constexpr (STEP == 2) p.next();
  }
  return prev;
}

// KTURNS: the two consumer warpgroups of a CTA take turns along K on one tile, each into its own
// accumulators; here the one that does not store this tile hands its sums over through shared
// memory (sum: Cfg::SMEM_RED, each thread's MR x N floats at a stride of 128, so a warp's stores
// and loads hit 32 banks once) and the one that does (`stores`, warpgroup `storer`) adds them to
// its own.  The storer alternates by tile, and both wait (bar.sync) on the storer's barrier
// (BAR_KTURNS_WG0 + storer): the writer after its stores, the storer before its loads.  So each
// warpgroup's accesses to the buffer alternate, write then read, and each is ordered after the
// other's last through a barrier both passed: a write follows the writer's own read of the tile
// before, which followed the other's write; a read follows its tile's write.  (With both waiting
// one id would do; a writer that only arrived (bar.arrive) needed the two, or it could complete
// the next tile's barrier with itself.  compute-sanitizer on an H100, bench/RESULTS.md
// thirty-sixth and thirty-seventh sessions: synccheck finds nothing; racecheck reported the
// buffer's reuse with the arriving writer, and with this wait still reports it in a 64 x 48 tile
// with the TMA epilogue, though not in a swapped 56 x 64 with direct stores.)  The sum is
// acc(these k-blocks) + acc(the others), whichever warpgroup adds: the same bits every run.
template <int MR, int N>
__device__ __forceinline__ bool kturns_sum(float (&acc)[MR][N], u32 sum, int storer, bool stores) {
  const u32 at = sum + 4 * (threadIdx.x % 128);
  if (!stores) {
#pragma unroll
    for (int mi = 0; mi < MR; ++mi)
#pragma unroll
      for (int q = 0; q < N; ++q) st_shared_f32(at + (mi * N + q) * 512, acc[mi][q]);
  }
  // one bar.sync for both warpgroups, the same instruction: bar.sync is barrier.sync.aligned,
  // which PTX defines only where every thread reaching the barrier executes the same one
  // (compute-sanitizer's synccheck flagged a wait in each branch as divergent)
  bar_sync(BAR_KTURNS_WG0 + storer, 256);
  if (!stores) return false;
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int q = 0; q < N; ++q) acc[mi][q] += ld_shared_f32(at + (mi * N + q) * 512);
  return true;
}

// The last group: its WGMMAs done, the accumulators pinned (no use may move above the wait),
// its stage released.
template <int MR, int N, class Release>
__device__ __forceinline__ void mainloop_drain(float (&acc)[MR][N], int prev, Release release) {
  wgmma_wait<0>();
#pragma unroll
  for (int mi = 0; mi < MR; ++mi)
#pragma unroll
    for (int q = 0; q < N; ++q) fence_reg(acc[mi][q]);
  if (prev >= 0) release(prev);
}

}  // namespace weft
