// weft/gemm_kernel.cuh: a persistent, warp-specialised Hopper GEMM, C[M,N] = A[M,K] . B (f32
// accumulation): TMA fills a STAGES-deep ring of shared-memory tiles, WGMMA warpgroups consume
// it.  gemm_persistent is the kernel body, generic over where A's rows come from (a source,
// below); gemm_wgmma is family gemm's kernel (A local); weft/ag_gemm.cuh's ag_gemm_wgmma is
// the fused all-gather + GEMM (A's shards arriving from other ranks).
//
// Roles (one CTA per SM, persistent over output tiles):
//   warpgroup 0   producer.  One lane of warp 0 issues the TMA loads of every (tile, k-block) into
//                 stage s, announcing the bytes on full[s]; it first waits on empty[s], which the
//                 consumers arrive on once their WGMMAs that read stage s have completed
//                 (weft/gemm_ring.cuh).  Warps 1-3 are the source's (ag_gemm: publish and pull).
//   warpgroups 1..CONSUMERS  consumers.  Each owns BM / CONSUMERS rows of the tile (swapped: BN /
//                 CONSUMERS of its columns), issues m64nBNk16 WGMMAs (swapped: m64nBMk16)
//                 straight from shared memory with one group in flight
//                 (weft/gemm_mainloop.cuh), and stores its accumulators to C by the epilogue
//                 (weft/gemm_epilogue.cuh) while the producer already fills the ring for the
//                 next tile.  Tiles come from weft/gemm_sched.cuh.
//
// Cfg is one struct of constants rendered by the family (gen/core/gemm.lua's cfg_struct): T, the
// tile BM x BN, STAGES, CONSUMERS, PINGPONG, the cluster CM x CN, SPLITK, EPI_TMA, B_ROW, GROUP,
// PDL, the Wgmma instruction, and the shared-memory layout's offsets (SMEM_*).
//
// PINGPONG (2 consumers): each consumer warpgroup owns whole tiles, alternating (this CTA's
// tiles 0, 2, 4, ... to the first, 1, 3, ... to the second), so one warpgroup's epilogue runs
// while the other's WGMMAs keep the tensor cores busy; it walks the ring past the other's
// stages.  Their main loops take turns (BAR_PINGPONG_WG0/1): tile i's main loop starts after
// tile i-1's was issued, so no reader is ever more than a ring ahead of the producer (a parity
// wait could otherwise see an older phase of the same stage).  Otherwise (cooperative) both
// split every tile by rows.
//
// Multicast clusters (CM x CN CTAs, CM * CN <= 2; swapped, up to 8 along either or both): a
// cluster takes CM x CN neighbouring tiles at once, CTA r the tile (r mod CM, r / CM) -- the CM
// row blocks of one column of the cluster share a column block of B, the CN column blocks of one
// row share a row block of A.  A shared operand is loaded once per cluster: each CTA loads its
// part and multicasts it to the CTAs that share it, so each full[s] still receives a whole stage
// (its expect_tx is unchanged) from several copies.  A part is a slice of the box's rows, or where a
// swapped tile's rows (M's, 8 to 256) do not split into whole 8-row swizzle groups (A_BY_K), the
// whole A box of every CN-th k-block: the CTAs take turns issuing it.  A stage may be refilled
// only when the consumers of every CTA are done with it (one of them writes into the others'
// shared memory): each consumer warp arrives on empty[s] of every CTA of the cluster.  The CTAs
// of a cluster walk the same tiles in the same order; a tile past the matrix edge still loads and
// multiplies (TMA fills zeros) so that its partner's stages complete, and stores nothing.  The
// cluster synchronises once the barriers exist (before any CTA writes into another) and again
// before exit (no CTA leaves while a partner may still arrive on its barriers).
//
// COOP_N (family gemm, 2 consumers): both split every tile by columns instead, each all its rows
// by BN / 2 columns, its B operand that far into the stage (cuBLASLt's coopB kernels, 192 x 192
// at 3072^3); each stores its half.
//
// KTURNS (family gemm, 2 consumers): both warpgroups work on every tile, taking turns along K --
// warpgroup c reads the stages s with s % 2 == c (STAGES even), so each stage keeps one reader
// and each warpgroup's ring is the plain one's, every other stage -- each into accumulators of
// the whole tile.  With one warpgroup per SM sub-partition's tensor core streaming narrow
// WGMMAs, the other's fill the gaps (cuBLASLt's kernel at 224 x 1536 x 8960 runs this way).
// Tile i's sums meet in warpgroup i % 2, which stores it (weft/gemm_mainloop.cuh kturns_sum).
//
// SPLITK = S > 1: a cluster of S CTAs along K, summed in a fixed order (weft/gemm_splitk.cuh: a
// tree to rank 0; swap_ab, flat, each CTA its slice).
//
// STREAM_K (family gemm): after the full waves, the k-blocks of the tiles left over shared out
// evenly over the CTAs, partial tiles handed over through a global workspace
// (weft/gemm_streamk.cuh, the walk in weft/gemm_sched.cuh); ws is the runtime's workspace for
// the launch's stream.
//
// SWAP (family gemm's swap_ab, for decode): the WGMMA computes C^T's tile, B's BN rows (64 per
// group, split over the consumers) times A's BM rows as its n (8, 16, ...), so an M of 1 loads
// an 8-row A box instead of a 64-row one and the ring's bytes are B's.  The loads and the
// schedule are the plain GEMM's (tiles of BM rows x BN columns of C); the consumers store the
// transposed accumulators straight to C.  A cluster of CN along N reads A's box once for CN
// tiles of B's rows, one of CM along M B's box once for CM row blocks, and CM x CN both, as
// cuBLASLt's kernels at M = 72-300 do (measured slower than weft's unclustered schedules there:
// bench/RESULTS.md, twelfth and fifteenth sessions).
//
// THIN (family gemm, unswapped, BM < 64: decode): A's box is BM rows (8, 16, ..., 56), so the
// ring holds B and the rows M has; the one consumer's m64 WGMMA reads 64 rows from the stage's A,
// the rest from the B bytes after them (the stage is at least 64 rows), into accumulator rows
// that no epilogue stores and no split-K hand-over reads (WG_ROWS: the rows a consumer stores).
//
// PDL: the kernel may be launched before the previous one in its stream has finished; it waits
// (griddepcontrol.wait) after setting up its shared memory.
//
// A source (Src) says where A's rows come from; its interface, as LocalA below has it:
//   SHARDED                 A may come in several shards (C's TMA map is then 3-d)
//   PRODUCER_REGS / CONSUMER_REGS   the register split (its comm warps may need more)
//   shards(), shard(j)      how many, and the j-th in schedule order
//   prefetch()              its own tensor maps (lane 0 of the producer)
//   producer_wait(s, lane)  the producer's warp, before the first tile of shard s
//   load_a<MC>(...)         one k-block of A's rows of shard s into a stage (MC: multicast to mask)
//   comm_warps(walk, c, n)  warps 1-3 of warpgroup 0 (the walk: this CTA's tiles, as the others see them)
//   retire()                every thread, at the end
//   STORES                  the source stores the tiles itself (gemm_rs: to their owners), by
//                           store<Cfg, MR>(c, cw, rows, n, r0, s, bn, acc) per consumer tile and
//                           consumers_done<Cfg>(c, rows, n) once per consumer thread after its
//                           last; false: the epilogue above (if constexpr: the plain GEMM's code
//                           is unchanged)
#pragma once
#include "weft/bulk.cuh"
#include "weft/cluster.cuh"
#include "weft/gemm.cuh"
#include "weft/gemm_epilogue.cuh"
#include "weft/gemm_mainloop.cuh"
#include "weft/gemm_ring.cuh"
#include "weft/gemm_sched.cuh"
#include "weft/gemm_splitk.cuh"
#include "weft/gemm_streamk.cuh"
#include "weft/launch.cuh"
#include "weft/types.cuh"

namespace weft {

template <class Cfg, class Src>
__device__ __forceinline__ void gemm_persistent(typename Cfg::T *c, long m, long n, long k, const TensorMap &ta,
                                                const TensorMap &tb, const TensorMap *tc, Src &src,
                                                const TensorMap *tct = nullptr, void *ws = nullptr) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, STAGES = Cfg::STAGES, CONSUMERS = Cfg::CONSUMERS;
  constexpr bool PINGPONG = Cfg::PINGPONG, KTURNS = Cfg::KTURNS, COOP_N = Cfg::COOP_N;
  constexpr int CM = Cfg::CM, CN = Cfg::CN, SPLITK = Cfg::SPLITK;
  static_assert(!PINGPONG || CONSUMERS == 2, "pingpong alternates two consumer warpgroups");
  static_assert(!KTURNS || (CONSUMERS == 2 && !PINGPONG && STAGES % 2 == 0 && STAGES >= 4 && SPLITK == 1 &&
                            !Cfg::STREAM_K && !Src::STORES && !Src::SHARDED),
                "kturns: family gemm's two consumers, each its own stages of an even ring (one in flight while "
                "it waits for its next: 4 at least), unsplit");
  constexpr int OWNERS = PINGPONG || KTURNS || COOP_N ? 1 : CONSUMERS;   // consumer warpgroups splitting one tile's rows
  constexpr bool SWAP = Cfg::SWAP;
  static_assert(SWAP ? CM * CN <= 8 && (CM & (CM - 1)) == 0 && (CN & (CN - 1)) == 0 : CM * CN <= 2,
                "multicast clusters of at most two CTAs; swapped, up to 8 (CM x CN, powers of two)");
  static_assert(SPLITK >= 1 && SPLITK <= 8 && (SPLITK == 1 || CM * CN == 1), "split-K: 2..8 CTAs along K, no multicast");
  static_assert(SPLITK == 1 || !PINGPONG, "split-K reduces cooperative tiles");
  static_assert(!Cfg::STREAM_K || (!PINGPONG && CM * CN * SPLITK == 1 && !Src::STORES), "stream-K: cooperative tiles, no cluster");
  constexpr int CS = CM * CN * SPLITK;                              // CTAs per cluster
  constexpr int SHARE = CM * CN;                                    // CTAs reading each stage
  static_assert(!SWAP || (!PINGPONG && !Cfg::EPI_TMA && !Cfg::B_ROW && !Src::STORES && !Src::SHARDED),
                "swap_ab: family gemm, cooperative, B column-major, the direct epilogue");
  constexpr int ACC_N = Cfg::ACC_N;                                 // the accumulators' columns (the WGMMA's n)
  constexpr bool THIN = !SWAP && BM < 64;
  static_assert(!COOP_N || (CONSUMERS == 2 && !PINGPONG && !KTURNS && !SWAP && !THIN && SPLITK == 1 && !Cfg::STREAM_K &&
                            !Src::STORES && !Src::SHARDED && 2 * ACC_N == BN &&
                            (!Cfg::B_ROW || ACC_N % (Cfg::B_SW64 ? 32 : 64) == 0)),
                "cooperative_n: family gemm's two consumers, each all the rows by half the columns (row-major B: whole "
                "boxes), unswapped, unsplit");
  static_assert(!Cfg::B_SW64 || (COOP_N && Cfg::B_ROW), "32-column boxes of B: cooperative_n's row-major halves");
  static_assert(!THIN || (OWNERS == 1 && !PINGPONG && CM * CN == 1 && !Src::STORES && !Src::SHARDED && BM % 8 == 0),
                "a thin tile: family gemm, one consumer, no multicast, whole 8-row groups of A");
  static_assert(!THIN || Cfg::SMEM_STAGE >= 64 * 128, "a thin tile's stage holds the 64 rows its WGMMA reads");
  // 64-row WGMMA groups per consumer: of the tile's rows, or swapped, of B's
  constexpr int MR = SWAP ? BN / (64 * OWNERS) : THIN ? 1 : BM / (64 * OWNERS);
  // rows of C a consumer stores per tile (swapped: its columns, MR * 64 of B's rows)
  constexpr int WG_ROWS = THIN ? BM : MR * 64;
  constexpr int STAGE_WARPS = (COOP_N ? CONSUMERS : OWNERS) * 4;   // consumer warps that read a stage
  // 384 threads were given 168 registers each at launch (64512), 512 threads 128 (65536).  Where a
  // consumer holds more than 64 accumulators, the loading warpgroup gives most of its share to
  // them (a source's comm warps need a little more than TMA issue alone); smaller tiles keep the
  // even split.  The shifted counts must add up to no more than the launch allocation,
  // 128 * P + 128 * CONSUMERS * C <= threads x the launch's per-thread count: setmaxnreg.inc waits
  // for registers that were never allocated, forever.  Three consumers (family gemm's 192-row
  // tiles, 96 accumulators at most) leave the producer 32 and take 160 each.
  static_assert(CONSUMERS <= 2 || (CONSUMERS == 3 && !PINGPONG && !SWAP && !THIN && SPLITK == 1 && !Cfg::STREAM_K &&
                                   !Src::STORES && !Src::SHARDED),
                "three consumer warpgroups: family gemm's cooperative 192-row tiles, unsplit");
  constexpr int PRODUCER_REGS = CONSUMERS == 3 ? 32 : Src::PRODUCER_REGS;
  constexpr int CONSUMER_REGS = CONSUMERS == 3 ? 160 : Src::CONSUMER_REGS;
  constexpr int LAUNCH_REGS = 65536 / (128 * (1 + CONSUMERS)) / 8 * 8;   // per thread, as the launch allocates
  constexpr bool SHIFT_REGS = CONSUMERS > 1 && MR * ACC_N / 2 > 64;
  static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 128 * (1 + CONSUMERS) * LAUNCH_REGS,
                "more registers than the launch allocated");
  extern __shared__ char smem_raw[];
  Ring<Cfg> ring;
  ring.carve(smem_raw);
  const int crank = CS > 1 ? (int)cluster_ctarank() : 0;   // this CTA within its cluster
  const int kblocks = (int)((k + GEMM_BK - 1) / GEMM_BK);
  const GemmWalk<Cfg, Src> walk(m, n, src.shards(), crank, kblocks);
  const long ms = walk.t.rows;
  // The warpgroup as lane 0 has it: the same number, but ptxas can see that it is warp-uniform,
  // so the consumers' WGMMA descriptors (their rows of the stage follow from it) are built by the
  // uniform datapath (UIADD3, ULOP3).  From threadIdx.x / 128 they were built per thread and moved
  // over by R2UR between every two HGMMAs: 3-12 % slower at 128 x 128 and 128 x 256 tiles
  // (bench/RESULTS.md, seventh session).
  const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
  SplitK<Cfg> sk(ring.base);
  sk.use_workspace(ws, (long)blockIdx.x - crank);
  if (threadIdx.x == 0) {
    ring.init(STAGE_WARPS * SHARE);   // one arrival per reading warp of each CTA
    sk.init();
    fence_barrier_init();
  }
  if constexpr (CS > 1) cluster_sync();
  else __syncthreads();
  if constexpr (Cfg::PDL) {
    // launched early (programmatic dependent launch): the barriers above are this CTA's own; A,
    // B and C are touched only after the kernel before this one is done.  Every thread waits,
    // so no store of C can overtake it either.  Then the next kernel may be scheduled: its CTAs
    // take SMs as this grid's leave and wait the same way.
    griddep_wait();
    griddep_launch_dependents();
  }

  if (wg == 0) {
    if constexpr (SHIFT_REGS) regs_dec<PRODUCER_REGS>();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {   // ---- producer
      if (lane == 0) {
        prefetch_tmap(ta);
        prefetch_tmap(tb);
        src.prefetch();
      }
      Pipe<STAGES> p;
      // This CTA's place in its cluster: the cm-th of the CM sharing its B tile (its row block),
      // the cn-th of the CN sharing its A tile (its column block); each operand goes to the CTAs
      // that share it (mask_a: those of its row of the cluster, the same row block; mask_b: of its
      // column, the same column block).
      const int cm = CM > 1 ? crank % CM : 0, cn = CN > 1 ? crank / CM : 0;
      u16 mask_a = 0;
#pragma unroll
      for (int j = 0; j < CN; ++j) mask_a |= (u16)(1u << (cm + CM * j));
      const u16 mask_b = (u16)(((1u << CM) - 1) << (CM * cn));
      // A's part this CTA loads and multicasts (CN > 1): Cfg::A_BY_K, the whole box on k-blocks kb
      // with kb % CN == cn; else AROWS of its rows on every k-block
      constexpr bool A_BY_K = Cfg::A_BY_K;
      static_assert(!A_BY_K || (SWAP && CN > 1), "A by k-block: a swapped tile's A shared along N");
      constexpr int AROWS = A_BY_K ? BM : BM / CN;
      const int items = walk.count();
      // the issuing lane by elect.sync, not lane == 0: ptxas then knows one lane runs the loads
      // and keeps their operands in uniform registers (under lane == 0 it wrapped every TMA
      // issue in a loop over the lanes' values)
      const bool leader = elect_one();
      for (int i = 0; i < items; ++i) {
        const GemmWork w = walk.item(src, i);
        src.producer_wait(w.s, lane);
        if (leader) {
          const int a_off = CN > 1 && !A_BY_K ? cn * AROWS : 0;
          for (int kb = w.kb0; kb < w.kb1; ++kb) {
            mbar_wait(&ring.empty[p.s], p.phase ^ 1);
            u64 *full = &ring.full[p.s];
            mbar_arrive_expect(full, Ring<Cfg>::STAGE_BYTES);
            if (!A_BY_K || kb % CN == cn)
              src.template load_a<(CN > 1)>(ring.a(p.s) + a_off * 128, ta, kb * GEMM_BK, w.bm * BM + a_off, w.s, full, mask_a);
            load_b<BN, Cfg::B_ROW, CM, Cfg::B_SW64>(ring.b(p.s), tb, kb, w.bn * BN, full, cm, mask_b);
            p.next();
          }
        }
        __syncwarp();
      }
    } else {   // ---- warps 1-3: the source's (ag_gemm: publish, then pull)
      src.comm_warps(walk, c, n);
    }
  } else {   // ---- consumers
    if constexpr (SHIFT_REGS) regs_inc<CONSUMER_REGS>();
    const int cw = wg - 1, lane = threadIdx.x % 32;
    // this warp is done with stage st (its wgmma.wait_group is warp-wide): one arrival in every
    // CTA that shares the stage (lane c tells CTA c)
    auto release = [&](int st) {
      if constexpr (SHARE > 1) {
        if (lane < SHARE) mbar_arrive_remote(&ring.empty[st], (u32)lane);
      } else {
        if (lane == 0) mbar_arrive(&ring.empty[st]);
      }
    };
    float acc[MR][ACC_N / 2];
    zero_acc(acc);
    Pipe<STAGES> p;
    const int step = PINGPONG ? 2 : 1;                  // this warpgroup's share of the CTA's tiles
    if (PINGPONG && cw == 1) p.skip(kblocks);           // the first tile's stages are the other's
    const int mine = walk.count();
    int splits = 0;                                     // split tiles so far (their hand-overs' phase)
    for (int i = PINGPONG ? cw : 0; i < mine; i += step) {   // i: the CTA's i-th tile
      const GemmWork w = walk.item(src, i);
      if (PINGPONG && i > 0) bar_sync(BAR_PINGPONG_WG0 + cw, 256);   // the other's main loop of tile i-1 was issued
      int prev;
      if constexpr (KTURNS) {   // this warpgroup's k-blocks: those in its stages (the even or the odd ones)
        const int first = w.kb0 + ((p.s & 1) != cw);
        Pipe<STAGES> q = p;
        if (first > w.kb0) q.next();
        if (first < w.kb1) prev = mainloop<Cfg, MR, 2>(acc, ring, q, first, w.kb1, 0, release);
        else prev = -1, zero_acc(acc);                  // (one k-block, the other's)
        p.skip(w.kb1 - w.kb0);
      } else {
        // (COOP_N: this warpgroup's B operand, its half of the tile's columns: ACC_N rows of a
        // column-major stage, ACC_N / 64 boxes of 8192 bytes (or / 32 of 4096) of a row-major one:
        // 128 bytes a column either way)
        const u32 b_off = COOP_N ? (u32)cw * ACC_N * 128 : 0;
        prev = mainloop<Cfg, MR>(acc, ring, p, w.kb0, w.kb1, OWNERS == 1 ? 0 : cw * MR * 64, release, b_off);
      }
      if (PINGPONG && i + 1 < mine) bar_arrive(BAR_PINGPONG_WG0 + (1 - cw), 256);   // tile i+1's main loop may start
      mainloop_drain(acc, prev, release);
      if (PINGPONG) p.skip(kblocks);                    // the other warpgroup's next tile
      if constexpr (KTURNS) {                           // the sums meet in warpgroup i % 2, which stores the tile
        if (!kturns_sum(acc, smem_addr(ring.base + Cfg::SMEM_RED), i % 2, i % 2 == cw)) continue;
      }
      // this consumer's first row of C, or swapped, its first column (its 64-row groups of B)
      const long r0 = (SWAP ? (long)w.bn * BN : (long)w.bm * BM) + (OWNERS == 1 ? 0 : cw * MR * 64);
      if constexpr (SPLITK > 1) {
        if (w.split) {
          if (w.kb0 == w.kb1) zero_acc(acc);   // (fewer k-blocks than CTAs: this one's share is empty)
          // the rows left are of C (of the tile: a thin one's), swapped of B (a warp's 16 past them
          // send nothing); the tree's rank 0 stores the tile
          const long left = (SWAP ? n : ms) - r0;
          if constexpr (SplitK<Cfg>::FLAT) {   // every CTA sums and stores its slice of acc's columns (C's rows)
            sk.template scatter<MR, ACC_N, CONSUMERS * 128>(acc, crank, splits++, i + step >= mine, left < WG_ROWS ? left : WG_ROWS);
            store_tile_swapped<typename Cfg::T, ACC_N, MR>(c, ms, n, (long)w.bm * BM, r0, acc, SplitK<Cfg>::template lo<ACC_N / 8>(crank),
                                                          SplitK<Cfg>::template lo<ACC_N / 8>(crank + 1));
            continue;
          } else if (!sk.template combine<MR, ACC_N, CONSUMERS * 128>(acc, crank, splits++, left < WG_ROWS ? left : WG_ROWS)) {
            continue;
          }
        }
      }
      if constexpr (Cfg::STREAM_K) {
        if (w.split) {
          using XK = StreamK<MR, ACC_N / 2, CONSUMERS * 128>;
          static_assert(XK::SLOT == Cfg::STREAMK_SLOT && Cfg::STREAMK_FLAGS == STREAMK_MAX_CTAS &&
                        Cfg::STREAMK_HEADER == STREAMK_HEADER, "the workspace the runtime sized (gen/core/gemm.lua)");
          const XK xk(ws);
          if (w.kb0 > 0) {   // a later part of a tile another CTA owns: hand it over, store nothing
            xk.publish(acc, walk.cta);
            continue;
          }
          xk.collect(acc, walk.cta, w.upto, [&](int c) { return walk.idle(c); }, w.bm, w.bn);
        }
      }
      if constexpr (SWAP) store_tile_swapped<typename Cfg::T, ACC_N, MR>(c, ms, n, (long)w.bm * BM, r0, acc);
      else if constexpr (Src::STORES) src.template store<Cfg, MR>(c, cw, ms, n, r0, w.s, w.bn, acc);
      else epilogue<Cfg, MR, WG_ROWS, Src::SHARDED>(c, tc, tct, ring.base, cw, ms, n, r0, w.s, w.bn, acc);
    }
    epilogue_finish<Cfg>();
    if constexpr (Src::STORES) src.template consumers_done<Cfg>(c, ms, n);
  }
  src.retire();
  if constexpr (CS > 1) cluster_sync();
}

// Family gemm's source: A is the one local matrix, read through ta; no shards, no comm.
struct LocalA {
  static constexpr bool SHARDED = false, STORES = false;
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  __device__ __forceinline__ int shards() const { return 1; }
  __device__ __forceinline__ int shard(int) const { return 0; }
  __device__ __forceinline__ void prefetch() const {}
  __device__ __forceinline__ void producer_wait(int, int) {}
  template <bool MC>
  __device__ __forceinline__ void load_a(char *dst, const TensorMap &ta, int k0, int row, int, u64 *full, u16 mask) const {
    if constexpr (MC) tma_load_2d_mc(dst, ta, k0, row, full, mask);
    else tma_load_2d(dst, ta, k0, row, full);
  }
  template <class Walk, class T> __device__ __forceinline__ void comm_warps(const Walk &, T *, long) {}
  __device__ __forceinline__ void retire() {}
};

// Family gemm's kernel body (templates/gemm.cu): tc is C's TMA map with EPI_TMA, else nullptr;
// tct its map for the narrow last chunk of a tile whose BN is not a multiple of 64, else nullptr.
template <class Cfg>
__device__ __forceinline__ void gemm_wgmma(typename Cfg::T *c, long m, long n, long k, const TensorMap &ta,
                                           const TensorMap &tb, const TensorMap *tc, const TensorMap *tct,
                                           void *ws = nullptr) {
  LocalA src;
  gemm_persistent<Cfg>(c, m, n, k, ta, tb, tc, src, tct, ws);
}

}  // namespace weft
