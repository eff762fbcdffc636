// weft/gemm_ar.cuh: GEMM + allreduce (family gemm_ar), the row-parallel linear layer whose
// output every rank keeps whole.  Rank r of P holds A_r (M x k: its K shard) and B_r (k x N);
// every rank ends with all M x N of sum_p A_p . B_p, folded in rank order in f32 and rounded
// once by the rank that owns the rows, so the bits are the same on every rank and every run.
// gemm_rs with a gather: the GEMM, its walk (own shard last) and the DONE round are gemm_rs.cuh's
// (RsPartials); the owner's fold also publishes its rounded rows, and every rank collects the
// others'.
//
// Per launch at epoch e, h = e % 2, on rank r; Ms = M / P.  Rank q's data half h is
//   S_q[h]  m x n f32 partials, then
//   R_q[h]  m x n of T, the rounded sum (shard s's rows at s * Ms * n).
// threadload:
//   1. GEMM   as gemm_rs: the tile of shard q goes as f32 into S_q[h] slot r (the owner's memory).
//   2. DONE   as gemm_rs: per block, release, to every rank; every CTA waits for every block.
//   3. fold   CTA b folds its share of shard r (vectors i = b*NT + t, stride grid*NT) from its
//             local slots in rank order, rounds once, stores to c's rows r*Ms.. and to R_r[h].
//   4. FOLDED CTA b sends FOLDED(e) (release, after a barrier over its consumers) to every rank.
//   5. gather CTA b waits for FOLDED(e) from block b of every other rank q -- the grid is the same
//             on every rank and block b of q folded exactly the vectors block b here copies -- and
//             reads them from R_q[h] (remote) into c's rows q*Ms.., peers from r + 1 on.
// multimem (every rank's partial stays home; the switch adds):
//   1. GEMM   the tile of shard q goes as f32 into this rank's own S_r[h], at its rows q*Ms..
//   2. DONE   as above (a peer will read the partial).
//   3. fold   shard r's vector i = multimem.ld_reduce over every rank's S[h] at rows r*Ms.. (the
//             emulated twin: the same rank-order fold of loads from every rank's S_p[h]); rounded
//             once, stored to c and, by multimem.st (the twin: a unicast fan-out), to every R_p[h].
//   4. FOLDED as above, after a fence.sys that orders the multimem stores.
//   5. gather from the local R_r[h] (every rank's rows arrived there).
// A real multimem.ld_reduce adds in the switch's own order; the twin's order is rank order.
// Reuse: S and R of half h are rewritten at epoch e + 2.  A rank p writes them there (its GEMM
// stores, its fold) only after its launch e + 1 waited for DONE(e + 1) from every block of every
// rank q, which q sent after its launch e -- whose fold read S and whose gather read R -- had
// finished (stream order): as in gemm_rs, DONE doubles as the acknowledgement.
// Timeouts name the rank owing DONE or FOLDED and the epoch; the rest of this launch is then
// skipped (c keeps partly old values) and the host reports it.  WEFT_FAULT=mute:<rank>:folded
// mutes the second signal.  ranks = 1: the plain GEMM epilogue, no staging (gemm_rs's).
#pragma once
#include "weft/gemm_rs.cuh"
#include "weft/multimem.cuh"

namespace weft {

enum { SIG_FOLDED = 1 };   // after SIG_DONE (gen/families/gemm_ar.lua: comm.signals); never given to wait_blocks

// dst[i] = src[i] for i = first, first + step, ... < n8, four loads in flight per thread (a
// remote read is latency-bound)
__device__ __forceinline__ void gather_rows(U4 *dst, const U4 *src, long n8, long first, long step) {
  long i = first;
  for (; i + 3 * step < n8; i += 4 * step) {
    U4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = src[i + u * step];
#pragma unroll
    for (int u = 0; u < 4; ++u) dst[i + u * step] = v[u];
  }
  for (; i < n8; i += step) dst[i] = src[i];
}

// X or Y by a constant (NVRTC has no <type_traits>)
template <bool B, class X, class Y> struct Pick { using type = X; };
template <class X, class Y> struct Pick<false, X, Y> { using type = Y; };

// gemm_rs's source (threadload: RsPartials; multimem: RsHome, the partials at home) with the
// owner's rows published and gathered
template <class Cfg> struct ArPartials : Pick<Cfg::MULTIMEM, RsHome<Cfg>, RsPartials<Cfg>>::type {
  using Base = typename Pick<Cfg::MULTIMEM, RsHome<Cfg>, RsPartials<Cfg>>::type;
  using T = typename Cfg::T;
  static constexpr int NT = Cfg::CONSUMERS * 128;
  static constexpr bool MULTIMEM = Cfg::MULTIMEM;
  __device__ __forceinline__ ArPartials(const Comm &cm_, long m_) : Base(cm_, m_) {}

  // the rounded sum's region in `base`'s current half (after the m x n partials)
  __device__ __forceinline__ T *result_of(char *base, long rows, long n) const {
    return (T *)(this->half_of(base) + (long)rows * this->shards() * n);
  }
  // vector i of the rounded rows into every rank's R (multimem) or this rank's (threadload)
  __device__ __forceinline__ void publish(long rows, long n, long i, const U4 &v) const {
    const Comm &cm = this->cm;
    const long at = (long)cm.rank * rows * n / 8 + i;
    if constexpr (MULTIMEM) {
      if (cm.mc) {
        multimem_st<T>((U4 *)result_of(cm.mc, rows, n) + at, v);
        return;
      }
#pragma unroll
      for (int p = 0; p < rank_slots<Cfg::NP>(); ++p)   // the emulated twin: unicast fan-out
        if (p < this->shards()) ((U4 *)result_of(cm.peers[p], rows, n))[at] = v;
    } else {
      ((U4 *)result_of(cm.peers[cm.rank], rows, n))[at] = v;
    }
  }
  // every consumer thread, after its last tile: DONE, the fold of this rank's rows, FOLDED, the gather
  template <class C> __device__ __forceinline__ void consumers_done(T *c, long rows, long n) {
    if constexpr (Cfg::NP == 1) return;
    const Comm &cm = this->cm;
    const int P = this->shards(), rank = cm.rank;
    const int tid = threadIdx.x - 128;
    const u64 e = this->epoch();
    if (this->done_round()) return;
    int stop = 0;
    const long n8 = rows * n / 8, first = (long)blockIdx.x * NT + tid, step = (long)gridDim.x * NT;
    U4 *out = (U4 *)c;
    for (long i = first; i < n8; i += step) {
      const U4 v = this->fold(rows, n, i);
      out[rank * n8 + i] = v;
      publish(rows, n, i, v);
    }
    if (MULTIMEM && cm.mc) __threadfence_system();   // order the multimem stores before the release
    bar_sync(BAR_CONSUMERS, NT);
    if (tid < P) send_signal(cm, SIG_FOLDED, tid, rank, e);
    // block b of every other rank folded the vectors this block collects
    Timeout to;
    if (tid < P && tid != rank)
      poll_bounded<false>(cm, signal_slot(cm, cm.peers[rank], SIG_FOLDED, tid, blockIdx.x), tid,
                          [e](u64 v) { return v >= e; }, [](u64 v) { return v; }, stop, to);
    to.report(cm, SIG_FOLDED, e);
    fence_acquire_sys();
    if (bar_or(BAR_CONSUMERS, NT, stop)) return;
    for (int j = 0; j < P - 1; ++j) {
      const int q = (rank + 1 + j) % P;
      gather_rows(out + q * n8, (const U4 *)result_of(MULTIMEM ? cm.peers[rank] : cm.peers[q], rows, n) + q * n8, n8,
                  first, step);
    }
  }
};

// ---- fold = "tiles" (threadload): gemm_rs's per-tile fold (RsTiles), then the gather --------
//   1. GEMM + fold  as gemm_rs fold = "tiles"; an own tile, once folded and rounded, goes to c's
//                   rows r*Ms.. and to R_r[h] (this rank's own).
//   2. FOLDED       each CTA, after its consumers' last tile (a barrier over them), sends
//                   FOLDED(e) to every rank -- unless a wait of this launch timed out on this rank:
//                   then the others' gathers time out too, rather than read what was never folded.
//   3. gather       every CTA waits for FOLDED(e) from every block of every other rank q (any
//                   block may have folded any tile), then copies its share of q's rows from R_q[h].
// Reuse as above: a rank rewrites S and R of half h at e + 2 only after its launch e + 1 waited
// for a TILE(e + 1) of every other rank, sent after that rank's launch e (its gather) had finished.
template <class Cfg> struct ArTiles : RsTiles<Cfg> {
  using Base = RsTiles<Cfg>;
  using T = typename Cfg::T;
  static constexpr int NT = Cfg::CONSUMERS * 128;
  __device__ __forceinline__ ArTiles(const Comm &cm_, long m_) : Base(cm_, m_) {}
  __device__ __forceinline__ T *result_of(char *base, long rows, long n) const {
    return (T *)(this->half_of(base) + (long)rows * this->shards() * n);
  }
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int cw, long rows, long n, long r0, int s, int bn, float (&acc)[MR][C::BN / 2]) {
    const int rank = this->cm.rank;
    if constexpr (Cfg::NP == 1) {
      store_tile<T, C::BN, MR>(c, n, r0, rows - r0, (long)bn * C::BN, acc);
    } else if (!this->inside(rows, n, r0, bn)) {
      return;   // a cluster's CTA past the matrix: no flag, no wait
    } else if (s != rank) {
      this->template send_tile<C, MR>(cw, rows, n, r0, s, bn, acc);
    } else if (this->template fold_tile<C, MR>(cw, rows, n, r0, bn, acc)) {
      const long at = (long)rank * rows * n;
      store_tile<T, C::BN, MR>(c + at, n, r0, rows - r0, (long)bn * C::BN, acc);
      store_tile<T, C::BN, MR>(result_of(this->cm.peers[rank], rows, n) + at, n, r0, rows - r0, (long)bn * C::BN, acc);
    }
  }
  template <class C> __device__ __forceinline__ void consumers_done(T *c, long rows, long n) {
    if constexpr (Cfg::NP == 1) return;
    const Comm &cm = this->cm;
    const int P = this->shards(), rank = cm.rank, tid = threadIdx.x - 128;
    const u64 e = this->epoch();
    // every own tile's stores issued before the release; a timeout here withholds it
    if (bar_or(BAR_CONSUMERS, NT, tid == 0 && ld_volatile(&cm.state->abort) != 0)) return;
    if (tid < P) send_signal(cm, SIG_FOLDED, tid, rank, e);
    int stop = 0;
    for (int j = 0; j < P - 1 && !stop; ++j) {
      const int q = (rank + 1 + j) % P;
      stop = wait_blocks_of(cm, SIG_FOLDED, q, e, tid, NT, q, 2);   // (twice as long: FOLDED follows q's TILE waits)
    }
    if (bar_or(BAR_CONSUMERS, NT, stop)) return;
    const long n8 = rows * n / 8, first = (long)blockIdx.x * NT + tid, step = (long)gridDim.x * NT;
    for (int j = 0; j < P - 1; ++j) {
      const int q = (rank + 1 + j) % P;
      gather_rows((U4 *)c + q * n8, (const U4 *)result_of(cm.peers[q], rows, n) + q * n8, n8, first, step);
    }
  }
};

// The kernel's body (templates/gemm_ar.cu).
template <class Cfg>
__device__ __forceinline__ void gemm_ar_wgmma(typename Cfg::T *c, long m, long n, long k, const TensorMap &ta,
                                              const TensorMap &tb, const Comm &cm) {
  static_assert(!Cfg::PDL && !Cfg::EPI_TMA && !Cfg::SPLIT_TAIL, "gemm_ar: direct f32 stores, no pdl, no split tail");
  static_assert(!Cfg::FOLD_TILES || !Cfg::MULTIMEM, "gemm_ar: fold = \"tiles\" is threadload's");
  if constexpr (Cfg::FOLD_TILES) {
    ArTiles<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  } else {
    ArPartials<Cfg> src(cm, m);
    gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
  }
}

}  // namespace weft
