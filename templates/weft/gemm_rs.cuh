// weft/gemm_rs.cuh: GEMM + reduce-scatter (family gemm_rs, reduce = "ordered"), the row-parallel
// linear layer (reduce = "atomic", not bit-stable: weft/gemm_rs_atomic.cuh, on RsPartials).  Rank r of P holds A_r (M x k: its K shard) and B_r (k x N); C_r = A_r . B_r is
// its partial; rank r ends with rows r*Ms .. (r+1)*Ms - 1 (Ms = M / P) of sum_p C_p.  The GEMM
// is weft/gemm_kernel.cuh's persistent kernel with a source (RsPartials) that stores the tiles
// itself; ag_gemm's protocol pieces (weft/ag_protocol.cuh: send_signal, wait_blocks) carry the
// one signal.
//
// Per launch at epoch e, h = e % 2, on rank r; S_q[h] is rank q's data half h, holding P f32
// partials of Ms x N, slot p (= the source rank) at float p * Ms * N:
//   1. GEMM   C_r's rows are cut into P shards of Ms rows (shard q = the rows rank q owns), each
//             tiled on its own; the walk takes shards in the order r+1, r+2, ..., r (its own
//             last), so that at any moment the ranks push to different owners and a rank's own
//             partial is the last it makes.  Each finished tile of shard q goes as f32 from the
//             consumer's registers into S_q[h][slot r] (weak 8-byte stores to q's mapped buffer).
//   2. DONE   each CTA b, once all its consumer threads have issued their last store (a named
//             barrier over them), sends DONE(e) to every rank q: pad[DONE][r][b] in q's pad,
//             with st.release.sys (send_signal).  The barrier orders every consumer thread's
//             stores before that release (it is cumulative), so a rank that acquires DONE(e)
//             from block b of rank p sees every partial tile block b of rank p wrote.  Per
//             block, not a grid-wide count: no atomics, and the pairing is by block index (the
//             grid is the same on every rank).
//   3. fold   every CTA waits (wait_blocks: relaxed polls, then fence.acq_rel.sys) for DONE(e)
//             from every block of every rank, itself included, then folds its share of the
//             Ms x N outputs: 8 elements at a time, acc = S_r[h][0] + S_r[h][1] + ... + S_r[h][P-1]
//             in f32, in that order, rounded once to T and stored to c.  Every input is this
//             rank's own memory; the order never depends on timing, so the bits never move.
// Reuse: S_q[h] is rewritten at epoch e + 2.  A rank p gets there only after its launch e + 1
// finished, which needed DONE(e + 1) from every block of every rank, q among them; q's blocks
// send DONE(e + 1) in launch e + 1, after q's launch e (whose fold read S_q[h]) had finished, in
// stream order.  So DONE(e + 1) is also q's acknowledgement that epoch e's partials were read:
// no extra round, as in allreduce.cuh and ag_protocol.cuh.
// Co-residency: every CTA waits for every CTA of every rank, so each rank's whole grid must be
// resident (cap = coresident; the runtime divides it among ranks sharing a GPU).
// A wait that times out names the rank that owes DONE, the signal and the epoch (poll_bounded's
// record); this rank's fold is then skipped (c keeps what it held) and the host reports it.
// WEFT_FAULT=mute:<rank>:done makes that rank send no DONE (send_signal's hook).
// ranks = 1 (Cfg::NP): no staging, no signal: the plain GEMM's direct epilogue into c.  A kernel
// for any world size takes the staging path on one rank too: a run-time branch between the two
// epilogues made ptxas serialise the WGMMAs (C7520: "WG.AR in divergent path").  NP also keeps
// the fold's loads to that many ranks.
#pragma once
#include "weft/ag_protocol.cuh"
#include "weft/gemm_kernel.cuh"
#include "weft/types.cuh"

namespace weft {

enum { SIG_DONE = 0 };   // the family's one signal (gen/families/gemm_rs.lua: comm.signals)

// The f32 accumulators of rows [r0, r0 + 64*MR) of a tile, rows < rows_valid and columns < n,
// into dst (row 0 of the partial, ldc = n): the m64nNk16 fragment's two adjacent columns per row
// as one 8-byte store (n is even: a pair is in or out whole).  Not 16-byte vectors: pairing two
// lanes' halves with shuffles made ptxas serialise the tile's WGMMAs (its C7520 report) for
// 128 x 256 tiles, the registers around the shuffles being the ones the pipeline needs.
// (an asm store: the same store written in C, through a float2 pointer, also cost the WGMMA pipeline)
__device__ __forceinline__ void st_global_f32x2(float *p, float x, float y) {
  asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(x), "f"(y) : "memory");
}

template <int BN, int MR>
__device__ __forceinline__ void store_tile_f32(float *dst, long n, long rows_valid, long col0, const float (&acc)[MR][BN / 2]) {
  for_acc_pairs<BN, MR>(acc, rows_valid, col0, n, 0, BN / 8, [&](long r, long col, float lo, float hi) { st_global_f32x2(dst + r * n + col, lo, hi); });
}

// Vector i (8 outputs) of the rank-order fold of P f32 partials, partial p at slot(p) (any
// rank's memory), rounded once.  Every load is in flight before the first add.
template <class T, int NP, class Slot>
__device__ __forceinline__ U4 fold_partials(Slot slot, long i, int P) {
  U4 v[2 * rank_slots<NP>()];
#pragma unroll
  for (int p = 0; p < rank_slots<NP>(); ++p)
    if (p < P) {
      const U4 *s = (const U4 *)slot(p);
      v[2 * p] = s[2 * i];
      v[2 * p + 1] = s[2 * i + 1];
    }
  float acc[8];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    acc[k] = __uint_as_float((&v[0].x)[k]);
    acc[4 + k] = __uint_as_float((&v[1].x)[k]);
  }
#pragma unroll
  for (int p = 1; p < rank_slots<NP>(); ++p)
    if (p < P) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        acc[k] += __uint_as_float((&v[2 * p].x)[k]);
        acc[4 + k] += __uint_as_float((&v[2 * p + 1].x)[k]);
      }
    }
  return pack_f32<T>(acc);
}

// Rows [i*8, i*8 + 8) of this rank's output from the P partials in the local half `s` (P * len
// floats, slot p at p * len).
template <class T, int NP>
__device__ __forceinline__ U4 rs_fold_slots(const float *s, long len, long i, int P) {
  return fold_partials<T, NP>([s, len](int p) { return s + p * len; }, i, P);
}

// The source: A is this rank's local M x k block, read through ta; tiles go to their owners.
template <class Cfg> struct RsPartials {
  static constexpr bool SHARDED = true, STORES = true;
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;   // (no comm warps: LocalA's split)
  static constexpr int NT = Cfg::CONSUMERS * 128;                 // consumer threads
  using T = typename Cfg::T;
  const Comm &cm;
  long m;
  // The epoch lives in shared memory, not in a register held across the main loop: the
  // consumers' 128 accumulators leave none to spare (ptxas serialises the WGMMAs otherwise).
  __device__ __forceinline__ static u64 &epoch_slot() {
    __shared__ u64 e;
    return e;
  }
  __device__ __forceinline__ RsPartials(const Comm &cm_, long m_) : cm(cm_), m(m_) {
    const u64 e = launch_epoch(cm);
    if (threadIdx.x == 0) epoch_slot() = e;   // (gemm_persistent's barrier after its set-up orders it)
  }
  __device__ __forceinline__ u64 epoch() const { return *(volatile u64 *)&epoch_slot(); }
  __device__ __forceinline__ int shards() const { return cm.ranks<Cfg::NP>(); }
  __device__ __forceinline__ int shard(int j) const { return (cm.rank + 1 + j) % cm.ranks<Cfg::NP>(); }   // own rows last
  __device__ __forceinline__ void prefetch() const {}
  __device__ __forceinline__ void producer_wait(int, int) {}
  template <bool MC>
  __device__ __forceinline__ void load_a(char *dst, const TensorMap &ta, int k0, int row, int s, u64 *full, u16 mask) const {
    const int r = (int)(s * (m / cm.ranks<Cfg::NP>())) + row;
    if constexpr (MC) tma_load_2d_mc(dst, ta, k0, r, full, mask);
    else tma_load_2d(dst, ta, k0, r, full);
  }
  template <class Walk> __device__ __forceinline__ void comm_warps(const Walk &, T *, long) {}
  __device__ __forceinline__ float *half_of(char *base) const {
    return (float *)(base + cm.data_offset + (long)(epoch() & 1) * cm.half_bytes);
  }
  // one consumer warpgroup's rows of a finished tile (rows r0.. of shard s, column block bn)
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int, long rows, long n, long r0, int s, int bn, const float (&acc)[MR][C::BN / 2]) {
    if constexpr (Cfg::NP == 1) {
      store_tile<T, C::BN, MR>(c, n, r0, rows - r0, (long)bn * C::BN, acc);
    } else {
      float *slot = half_of(cm.peers[s]) + (long)cm.rank * rows * n;
      store_tile_f32<C::BN, MR>(slot + r0 * n, n, rows - r0, (long)bn * C::BN, acc);
    }
  }
  // every consumer thread after its last tile: DONE to every rank once every consumer's stores
  // are issued, then DONE from every block of every rank; 1 where a wait stopped (all threads)
  __device__ __forceinline__ int done_round() const {
    const int P = cm.ranks<Cfg::NP>(), rank = cm.rank;
    const int tid = threadIdx.x - 128;
    const u64 e = epoch();
    bar_sync(BAR_CONSUMERS, NT);   // every consumer's partial stores issued before the release
    if (tid < P) send_signal(cm, SIG_DONE, tid, rank, e);
    int stop = 0;
    for (int p = 0; p < P && !stop; ++p) stop = wait_blocks(cm, SIG_DONE, p, e, tid, NT);
    return bar_or(BAR_CONSUMERS, NT, stop);
  }
  // vector i (8 outputs) of this rank's rows of the sum, from its local slots, rounded
  __device__ __forceinline__ U4 fold(long rows, long n, long i) const {
    return rs_fold_slots<T, Cfg::NP>(half_of(cm.peers[cm.rank]), rows * n, i, shards());
  }
  // every consumer thread, after its last tile: the DONE round, then this CTA's share of the fold
  template <class C> __device__ __forceinline__ void consumers_done(T *c, long rows, long n) {
    if constexpr (Cfg::NP == 1) return;
    if (done_round()) return;
    const long n8 = rows * n / 8;   // (n is a multiple of 8)
    for (long i = (long)blockIdx.x * NT + threadIdx.x - 128; i < n8; i += (long)gridDim.x * NT) ((U4 *)c)[i] = fold(rows, n, i);
  }
  __device__ __forceinline__ void retire() { launch_retire(cm, epoch()); }
};

// ---- comm = "multimem" (RsHome): every partial stays home; the owner's switch adds -----------------
// The tile of shard q goes as f32 into this rank's own S_r[h], at its rows q*Ms.. (local stores);
// the DONE round as above (now a peer will read it); then vector i of shard r is
// multimem.ld_reduce over every rank's S[h] at rows r*Ms.. -- or, the emulated twin without a
// multicast address, the rank-order fold of loads from every rank's S_p[h] (the same bits every
// run; the switch adds in its own order).  Reuse as above: S_p[h] is rewritten by p at e + 2 only
// after DONE(e + 1) from every rank, each sent after that rank's launch e (its reads) finished.
template <class Cfg> struct RsHome : RsPartials<Cfg> {
  using Base = RsPartials<Cfg>;
  using T = typename Cfg::T;
  __device__ __forceinline__ RsHome(const Comm &cm_, long m_) : Base(cm_, m_) {}
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int cw, long rows, long n, long r0, int s, int bn, const float (&acc)[MR][C::BN / 2]) {
    if constexpr (Cfg::NP == 1) {
      Base::template store<C, MR>(c, cw, rows, n, r0, s, bn, acc);
    } else {
      float *mine = this->half_of(this->cm.peers[this->cm.rank]) + (long)s * rows * n;
      store_tile_f32<C::BN, MR>(mine + r0 * n, n, rows - r0, (long)bn * C::BN, acc);
    }
  }
  __device__ __forceinline__ U4 fold(long rows, long n, long i) const {
    const Comm &cm = this->cm;
    const int rank = cm.rank;
    const long len = rows * n;
    if (cm.mc) {
      const U4 *s = (const U4 *)(this->half_of(cm.mc) + (long)rank * len);
      float acc[8];
      const U4 lo = multimem_ld_reduce<f32, MM_ADD>(s + 2 * i), hi = multimem_ld_reduce<f32, MM_ADD>(s + 2 * i + 1);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        acc[k] = __uint_as_float((&lo.x)[k]);
        acc[4 + k] = __uint_as_float((&hi.x)[k]);
      }
      return pack_f32<T>(acc);
    }
    return fold_partials<T, Cfg::NP>([&](int p) { return this->half_of(cm.peers[p]) + (long)rank * len; }, i, this->shards());
  }
  template <class C> __device__ __forceinline__ void consumers_done(T *c, long rows, long n) {
    if constexpr (Cfg::NP == 1) return;
    if (this->done_round()) return;
    const long n8 = rows * n / 8;
    for (long i = (long)blockIdx.x * Base::NT + threadIdx.x - 128; i < n8; i += (long)gridDim.x * Base::NT)
      ((U4 *)c)[i] = fold(rows, n, i);
  }
};

// ---- fold = "tiles" (Cfg::FOLD_TILES): the owner folds each of its tiles in the epilogue ---------
// The walk takes the own shard last, so by the time a rank reaches its own tiles the others have
// mostly sent theirs.  Per launch at epoch e, h = e % 2, on rank r:
//   other shard q  the tile's f32 partial goes to S_q[h] slot r as above; then its warpgroup
//                  syncs (a named barrier over its 128 threads: every store issued) and one thread
//                  releases TILE(e) for (source r, tile, part) into q's flags (st.release.sys).
//   own shard r    the warpgroup waits for TILE(e) of this tile and part from every other rank
//                  (thread p polls rank p's flag, relaxed, then fence.acq_rel.sys; the stop is
//                  OR-ed over the warpgroup), folds in rank order -- its own partial straight from
//                  the accumulators, the others' from its slots -- rounds once and stores to c.
//                  The same f32 values in the same order as fold = "after": the same bits.
// Flags: one u64 per (source, tile, part) -- part = the cooperative warpgroup whose rows they are
// (pingpong: one part) -- in a region of their own between the pads and the data (comm.flag_div),
// holding only epochs: a later launch of another shape finds older epochs there, never data.  The
// region is cut into one equal part per source, indexed by tile within it, so a flag's slot never
// depends on another source's tile numbering: with P >= 3 a rank may already be in launch e + 1,
// with another shape, while a slower one still sends its tiles of e, and a slot shared between
// sources would let the newer epoch of one pass for the other's.  One region for both halves: a
// flag is waited for as ">= e", and a source's own later value (e + 1: it finished e) also
// passes.  A cluster's CTA whose tile lies past the matrix (an odd count of row or column blocks)
// neither sends nor waits: its slot is another tile's.  No DONE round: a rank waits, in
// launch e + 1, for a TILE(e + 1) of every other rank, which each sent after finishing launch e,
// so the staging it rewrites at e + 2 is no longer read (every rank has at least one tile of
// every shard).  No deadlock: a CTA's walk takes every tile of the other shards (which never wait)
// before its own, and every CTA of every rank is resident.
// WEFT_FAULT=mute:<rank>:tile silences a rank's flags.
enum { SIG_TILE = 0 };   // fold = "tiles": the family's one signal

template <class Cfg> struct RsTiles : RsPartials<Cfg> {
  using Base = RsPartials<Cfg>;
  using T = typename Cfg::T;
  static constexpr int PARTS = Cfg::PINGPONG ? 1 : Cfg::CONSUMERS;
  __device__ __forceinline__ RsTiles(const Comm &cm_, long m_) : Base(cm_, m_) {}

  // the flag of (source, tile of row block bm and column block bn, part) in `base`'s buffer: the
  // region starts where the pads of the family's signals end and ends at the data (both as
  // runtime/core/comm.c lays them out); source src's part is the src-th of P equal parts, which
  // hold every tile of any shape the communicator takes (comm.flag_div; tests/lua/test_generate.lua
  // checks the bound for every tile shape, rank count and size class)
  __device__ __forceinline__ u64 *flag(char *base, long n, int src, long bm, int bn, int part) const {
    const long nt = (n + Cfg::BN - 1) / Cfg::BN;
    const long pads = ((long)Cfg::SIGNALS * MAX_RANKS * this->cm.max_blocks * 8 + 255) / 256 * 256;
    const long per = (this->cm.data_offset - pads) / 8 / this->shards();
    return (u64 *)(base + pads) + src * per + (bm * nt + bn) * PARTS + part;
  }
  // whether the tile exists (a cluster's second CTA may hold one past the matrix)
  __device__ __forceinline__ static bool inside(long rows, long n, long r0, int bn) {
    return r0 < rows && (long)bn * Cfg::BN < n;
  }
  // another shard's tile: its f32 partial into the owner's slot, then its flag
  template <class C, int MR>
  __device__ __forceinline__ void send_tile(int cw, long rows, long n, long r0, int s, int bn, const float (&acc)[MR][C::BN / 2]) const {
    const Comm &cm = this->cm;
    const int rank = cm.rank;
    float *slot = this->half_of(cm.peers[s]) + (long)rank * rows * n;
    store_tile_f32<C::BN, MR>(slot + r0 * n, n, rows - r0, (long)bn * C::BN, acc);
    bar_sync(BAR_TILE_WG0 + cw, 128);   // this warpgroup's stores issued before the release (cumulative)
    // (a muted rank still flags its own tiles to itself: reducer = "producer" folds them from its slot)
    if (threadIdx.x % 128 == 0 && !(rank == cm.mute_rank && cm.mute_signal == SIG_TILE && s != rank))
      st_release_sys(flag(cm.peers[s], n, rank, r0 / Cfg::BM, bn, Cfg::PINGPONG ? 0 : cw), this->epoch());
  }
  // an own tile: acc := the rank-order sum once every other rank's flag for it is in; false if a
  // wait stopped (a timeout: the host reports it)
  template <class C, int MR>
  __device__ __forceinline__ bool fold_tile(int cw, long rows, long n, long r0, int bn, float (&acc)[MR][C::BN / 2]) const {
    const Comm &cm = this->cm;
    const int rank = cm.rank, P = this->shards(), t = threadIdx.x % 128, part = Cfg::PINGPONG ? 0 : cw;
    const u64 e = this->epoch();
    int stop = 0;
    Timeout to;
    if (t < P && t != rank)
      poll_bounded<false>(cm, flag(cm.peers[rank], n, t, r0 / Cfg::BM, bn, part), t, [e](u64 v) { return v >= e; },
                          [](u64 v) { return v; }, stop, to);
    to.report(cm, SIG_TILE, e);
    fence_acquire_sys();
    if (bar_or(BAR_TILE_WG0 + cw, 128, stop)) return false;
    fold_into<C::BN, MR>(acc, this->half_of(cm.peers[rank]) + r0 * n, rows * n, n, rows - r0, (long)bn * C::BN, rank, P);
    return true;
  }
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int cw, long rows, long n, long r0, int s, int bn, float (&acc)[MR][C::BN / 2]) {
    if constexpr (Cfg::NP == 1) {
      store_tile<T, C::BN, MR>(c, n, r0, rows - r0, (long)bn * C::BN, acc);
    } else if (!inside(rows, n, r0, bn)) {
      return;   // (the same for the whole warpgroup: no barrier is left waiting)
    } else if (s != this->cm.rank) {
      send_tile<C, MR>(cw, rows, n, r0, s, bn, acc);
    } else if (fold_tile<C, MR>(cw, rows, n, r0, bn, acc)) {
      store_tile<T, C::BN, MR>(c, n, r0, rows - r0, (long)bn * C::BN, acc);
    }
  }
  // acc (this rank's partial of rows [r0, ..) of a tile) := the rank-order sum of every rank's:
  // slot p at s + p * len (row r0 of the shard), this rank's own in the registers
  template <int BN, int MR>
  __device__ __forceinline__ static void fold_into(float (&acc)[MR][BN / 2], const float *s, long len, long n, long rows_valid,
                                                   long col0, int rank, int P) {
    for_acc_pairs<BN, MR>(acc, rows_valid, col0, n, 0, BN / 8, [&](long r, long col, float &a0, float &a1) {
      const float *row = s + r * n;
      // (the loads in the chain: the unrolled columns keep enough of them in flight, and a
      // vector of every rank's pair per column spilled at 8 ranks)
      auto at = [&](int p) { return p == rank ? make_float2(a0, a1) : *(const float2 *)(row + p * len + col); };
      float2 x = at(0);
#pragma unroll
      for (int p = 1; p < rank_slots<Cfg::NP>(); ++p)
        if (p < P) {
          const float2 v = at(p);
          x.x += v.x;
          x.y += v.y;
        }
      a0 = x.x;
      a1 = x.y;
    });
  }
  template <class C> __device__ __forceinline__ void consumers_done(T *, long, long) {}
};

// 4 outputs (at float offset `at` of every slot: one row, 4 columns) of the rank-order fold of the
// P f32 slots at s + p * len, rounded once.  Loads go four ranks at a time (16 bytes each), all
// four in flight before their adds (two for a kernel of any rank count, whose predicated loads
// need more registers): eight at once spilled in the comm warps' registers.
template <class T, int NP>
__device__ __forceinline__ uint2 fold4_slots(const float *s, long len, long at, int P) {
  constexpr int R = rank_slots<NP>(), G = NP == 0 ? 2 : R < 4 ? R : 4;
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int p0 = 0; p0 < R; p0 += G) {
    float4 v[G];
#pragma unroll
    for (int j = 0; j < G; ++j)
      if (p0 + j < P) v[j] = *(const float4 *)(s + (p0 + j) * len + at);
#pragma unroll
    for (int j = 0; j < G; ++j)
      if (p0 + j < P) {
        if (p0 + j == 0) {
          a = v[j];
        } else {
          a.x += v[j].x;
          a.y += v[j].y;
          a.z += v[j].z;
          a.w += v[j].w;
        }
      }
  }
  return make_uint2(pack2<T>(a.x, a.y), pack2<T>(a.z, a.w));
}

// ---- reducer = "producer" (Cfg::REDUCER_PRODUCER, with fold = "tiles") -------------------------
// Which warps reduce.  Here the consumers never fold and never wait: every finished tile, the own
// shard's too, goes as its f32 partial to the owner's slot with its flag (send_tile; an own tile
// into this rank's slot r, its flag among this rank's), and the consumers go on to the next tile.
// Warps 1-3 of the loading warpgroup (96 threads beside the TMA warp; idle in gemm_rs otherwise)
// take this CTA's own tiles in walk order: per part, thread p waits for rank p's flag (every rank,
// this one included; relaxed polls, fence.acq_rel.sys, the stop OR-ed over the 96 on BAR_COMM),
// then the 96 fold the part's P slots in rank order, round once and store to c.  The same f32
// values in the same order as fold = "after": the same bits.  Each own tile's fold overlaps the
// consumers' next own tile (the own shard comes last in the walk); the last one's is exposed.
// The flags, the reuse of the staging and the absence of a DONE round are fold = "tiles"'s (the
// own flags included: a rank reaches its own tiles of e + 2 only after launch e + 1 finished).
// No deadlock: the consumers wait for nobody (they stop at the CTA's end), the comm warps only for
// flags that consumers send, and every CTA of every rank is resident.  The comm warps get 72
// registers (the consumers 216; with 64 the count below spilled); split_k = 1 only (the
// generator's check).
// When a tile is due: the comm warps first wait (thread 0 in shared memory, with no time limit,
// the others at BAR_COMM) until this CTA's consumers have sent as many own tiles of that part as
// the comm warps have folded plus one (a count in shared memory, raised after each own tile's
// flag), and only then start the bounded polls: so the timeout runs from where fold = "tiles"'s consumers would start waiting,
// not from the kernel's start, and no thread spins on the system scope during the GEMM.  The
// count is only the clock's start (pingpong's two warpgroups may raise it out of tile order);
// what the fold reads is still ordered by every rank's flag, this rank's own included.
template <class Cfg> struct RsTilesProducer : RsTiles<Cfg> {
  using Base = RsTiles<Cfg>;
  using T = typename Cfg::T;
  static constexpr int PRODUCER_REGS = 72, CONSUMER_REGS = 216;   // 128 * 72 + 256 * 216: the launch's 64512
  static constexpr int COMM_THREADS = 96;
  // own tiles sent so far, per part (a count the comm warps wait on before a tile's flags)
  __device__ __forceinline__ static int *sent_own() {
    __shared__ int n[Base::PARTS];
    return n;
  }
  __device__ __forceinline__ RsTilesProducer(const Comm &cm_, long m_) : Base(cm_, m_) {
    if (threadIdx.x < Base::PARTS) sent_own()[threadIdx.x] = 0;   // (gemm_persistent's barrier after its set-up orders it)
  }
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int cw, long rows, long n, long r0, int s, int bn, float (&acc)[MR][C::BN / 2]) {
    if constexpr (Cfg::NP == 1) {
      Base::template store<C, MR>(c, cw, rows, n, r0, s, bn, acc);
    } else if (Base::inside(rows, n, r0, bn)) {
      this->template send_tile<C, MR>(cw, rows, n, r0, s, bn, acc);
      if (s == this->cm.rank && threadIdx.x % 128 == 0) atomicAdd(&sent_own()[Cfg::PINGPONG ? 0 : cw], 1);
    }
  }
  // warps 1-3: this CTA's own tiles, folded as every rank's partial of each part arrives
  template <class Walk> __device__ __forceinline__ void comm_warps(const Walk &walk, T *c, long n) {
    if constexpr (Cfg::NP == 1) return;
    constexpr int PART_ROWS = Cfg::BM / Base::PARTS;   // a cooperative warpgroup's rows (pingpong: the tile)
    const Comm &cm = this->cm;
    const int rank = cm.rank, P = this->shards(), tid = threadIdx.x - 32;
    const long rows = walk.t.rows, len = rows * n;
    const u64 e = this->epoch();
    const float *half = this->half_of(cm.peers[rank]);
    // thread p's flags: rank p's part of the region (flag()'s layout, its division done once)
    const u64 *flags = this->flag(cm.peers[rank], n, tid < P ? tid : 0, 0, 0, 0);
    const long nt = (n + Cfg::BN - 1) / Cfg::BN;
    const int items = walk.count();
    int stop = 0, folded[Base::PARTS] = {};
    Timeout to;
    for (int i = 0; i < items && !stop; ++i) {
      const GemmWork w = walk.item(*this, i);
      if (w.s != rank) continue;
#pragma unroll
      for (int part = 0; part < Base::PARTS; ++part) {   // (unrolled: folded[] stays in registers)
        const long r0 = (long)w.bm * Cfg::BM + part * PART_ROWS, col0 = (long)w.bn * Cfg::BN;
        if (stop || !Base::inside(rows, n, r0, w.bn)) continue;   // (its consumer sent no flag either)
        const int due = ++folded[part];
        if (tid == 0)
          while (*(volatile int *)&sent_own()[part] < due) __nanosleep(256);   // the consumers always get there
        bar_sync(BAR_COMM, COMM_THREADS);
        if (tid < P)
          poll_bounded<false>(cm, flags + ((long)w.bm * nt + w.bn) * Base::PARTS + part, tid, [e](u64 v) { return v >= e; },
                              [](u64 v) { return v; }, stop, to);
        fence_acquire_sys();
        stop = bar_or(BAR_COMM, COMM_THREADS, stop);
        if (stop) continue;
        const long nr = min((long)PART_ROWS, rows - r0), per_row = min((long)Cfg::BN, n - col0) / 4;   // (n: a multiple of 8)
        for (long v = tid; v < nr * per_row; v += COMM_THREADS) {
          const long at = (r0 + v / per_row) * n + col0 + 4 * (v % per_row);
          *(uint2 *)(c + at) = fold4_slots<T, Cfg::NP>(half, len, at, P);
        }
      }
    }
    to.report(cm, SIG_TILE, e);
  }
};

// The kernel's body (templates/gemm_rs.cu).
template <class Cfg>
__device__ __forceinline__ void gemm_rs_wgmma(typename Cfg::T *c, long m, long n, long k, const TensorMap &ta,
                                              const TensorMap &tb, const Comm &cm) {
  static_assert(!Cfg::PDL && !Cfg::EPI_TMA && !Cfg::SPLIT_TAIL, "gemm_rs: direct f32 stores, no pdl, no split tail");
  if constexpr (Cfg::FOLD_TILES && Cfg::REDUCER_PRODUCER) {
    RsTilesProducer<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  } else if constexpr (Cfg::FOLD_TILES) {
    RsTiles<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  } else if constexpr (Cfg::MULTIMEM) {
    RsHome<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  } else {
    RsPartials<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  }
}

}  // namespace weft
