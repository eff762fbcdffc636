// weft/gemm_sched.cuh: which output tiles a CTA computes, and in what order.
// Tiles come in cluster units (CM x CN neighbouring tiles: a cluster takes them at once, CTA r
// of the cluster the tile (r mod CM, r / CM) of its unit), unit
// u of shard j in schedule order is (j, u - j * per_shard), rastered within the shard in groups
// of GROUP row blocks; cluster c takes units c, c + clusters, ...  Producer, consumers and the
// CTAs of a cluster all walk this same sequence, which is what keeps their rings in step.
#pragma once
#include "weft/types.cuh"

namespace weft {

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

// The schedule of one CTA over the shards of C, `rows` = m / shards x n each (the plain GEMM:
// one shard).  Src names the shards (Src::SHARDED: there may be more than one; else the shard
// index is 0 without a division).
template <class Cfg, class Src> struct TileSched {
  static constexpr int CS = Cfg::CM * Cfg::CN * Cfg::SPLITK;   // CTAs per cluster
  int crank, cid, clusters;   // this CTA in its cluster; its cluster; how many
  long rows;                  // rows of a shard
  int mu, nu, per_shard, units;
  __device__ __forceinline__ TileSched(long m, long n, int shards, int crank_) {
    crank = crank_;
    cid = (int)blockIdx.x / CS;
    clusters = (int)gridDim.x / CS;
    rows = m / shards;
    const int mt = (int)((rows + Cfg::BM - 1) / Cfg::BM), nt = (int)((n + Cfg::BN - 1) / Cfg::BN);
    mu = (mt + Cfg::CM - 1) / Cfg::CM;   // cluster units per shard
    nu = (nt + Cfg::CN - 1) / Cfg::CN;
    per_shard = mu * nu;
    units = per_shard * shards;
  }
  // unit u -> its shard s and this CTA's row and column block in it
  __device__ __forceinline__ void at(const Src &src, int u, int &s, int &bm, int &bn) const {
    const int j = Src::SHARDED ? (int)((unsigned)u / (unsigned)per_shard) : 0;   // its place in schedule order
    s = src.shard(j);
    raster(u - j * per_shard, mu, nu, Cfg::GROUP, bm, bn);
    bm = bm * Cfg::CM + (Cfg::CM > 1 ? crank % Cfg::CM : 0);
    bn = bn * Cfg::CN + (Cfg::CN > 1 ? crank / Cfg::CM : 0);
  }
  // how many units this CTA's cluster takes (its i-th is unit cid + i * clusters)
  __device__ __forceinline__ int mine() const { return units > cid ? (units - cid + clusters - 1) / clusters : 0; }
};

// CTA `crank` of a split-K cluster of S: k-blocks [crank KB / S, (crank + 1) KB / S) of KB.
template <int S> __device__ __forceinline__ void split_range(int kblocks, int crank, int &kb0, int &kb1) {
  kb0 = S > 1 ? (int)((long)crank * kblocks / S) : 0;
  kb1 = S > 1 ? (int)((long)(crank + 1) * kblocks / S) : kblocks;
}

// One piece of work of a CTA: shard s, row and column block, its k-blocks [kb0, kb1), and
// whether its cluster splits that tile along K (then its partial sums are combined).  Stream-K:
// split means a part of the tile's K; the part holding k-block 0 (its owner) adds the partials
// of CTAs owner + 1 .. upto (weft/gemm_streamk.cuh).
struct GemmWork {
  int s, bm, bn, kb0, kb1;
  bool split;
  int upto;
};

// What a CTA computes, in order, for every schedule: the producer and the consumers both walk
// it, so their rings stay in step.
//   plain / split_k       unit cid + i * clusters (TileSched), all of K, or this CTA's share of it
//   SPLIT_TAIL (split_k)  data-parallel, then split: the P = clusters * S CTAs take whole tiles of
//                         their own (tile i * P + CTA), over all of K, for as many full waves as
//                         the T tiles have; the last, partial wave's t tiles (t <= clusters) are
//                         split along K, tile D + c to cluster c.  With more than a cluster's worth
//                         left over, splitting would not shorten the wave: the tiles stay whole.
//   STREAM_K              data-parallel, then stream-K: with T tiles on the grid's P CTAs, every
//                         CTA first takes whole tiles (tile i * P + CTA) for every full wave; the
//                         R = T mod P tiles left (all T < P) make W = R x KB k-blocks, laid end to
//                         end tile by tile, and CTA c < Q takes [c W / Q, (c + 1) W / Q) of them:
//                         the end of one tile, whole tiles, the start of another.  Q = min(P,
//                         STREAMK_FAN x R): at most about STREAMK_FAN CTAs share a tile.  So a
//                         tile's k-blocks go to consecutive CTAs, the lowest (its owner) holding
//                         k-block 0, and each CTA reaches its part of a tile it owns last, of a
//                         tile it does not own first.  (The full waves stay data-parallel: CTAs
//                         that stream at different k stop sharing A's and B's tiles in L2 --
//                         1024 x 10240 x 8192 with a whole wave streamed as well ran 1.38x the
//                         data-parallel schedule, bench/RESULTS.md.)
constexpr int STREAMK_FAN = 4;   // stream-K: CTAs per tile, about (the owner adds the others' partials)

template <class Cfg, class Src> struct GemmWalk {
  static constexpr int S = Cfg::SPLITK;
  TileSched<Cfg, Src> t;
  int kblocks, crank;
  int dp = 0, tail = 0, P = 1, D = 0, cta = 0;   // SPLIT_TAIL: whole tiles, the split tile, ...
  long W = 0, g0 = 0, g1 = 0;                     // STREAM_K: k-blocks streamed, this CTA's [g0, g1)
  int Q = 1;                                      //   the CTAs that stream them
  int j0 = 0, streamed = 0;                       //   its first streamed tile, and how many it touches
  __device__ __forceinline__ GemmWalk(long m, long n, int shards, int crank_, int kblocks_)
      : t(m, n, shards, crank_), kblocks(kblocks_), crank(crank_) {
    // both tails: the P CTAs take whole tiles for the D = T / P * P of the T tiles that fill waves
    const int T = t.units;
    if constexpr (Cfg::STREAM_K || Cfg::SPLIT_TAIL) {
      P = t.clusters * S;
      cta = t.cid * S + crank;
      D = T / P * P;
    }
    if constexpr (Cfg::STREAM_K) {
      static_assert(!Src::SHARDED && Cfg::CM * Cfg::CN == 1 && S == 1 && !Cfg::SPLIT_TAIL, "stream-K: family gemm only");
      dp = D / P;
      Q = T - D < P / STREAMK_FAN ? (T - D) * STREAMK_FAN : P;
      W = (long)(T - D) * kblocks;
      g0 = cta < Q ? cta * W / Q : W;
      g1 = cta < Q ? (cta + 1) * W / Q : W;
      j0 = (int)(g0 / kblocks);
      streamed = g1 > g0 ? (int)((g1 - 1) / kblocks) - j0 + 1 : 0;
    }
    if constexpr (Cfg::SPLIT_TAIL) {
      static_assert(!Src::SHARDED && Cfg::CM * Cfg::CN == 1 && S > 1, "the split tail: family gemm's split-K only");
      if (T - D > t.clusters) D = T;   // (the leftover would take as long split as whole)
      dp = D / P + (cta < D - D / P * P ? 1 : 0);
      tail = D < T && t.cid < T - D ? 1 : 0;
    }
  }
  __device__ __forceinline__ int count() const {
    return Cfg::STREAM_K ? dp + streamed : Cfg::SPLIT_TAIL ? dp + tail : t.mine();
  }
  // STREAM_K: the CTA whose k-blocks include streamed k-block g, and whether CTA c has none
  __device__ __forceinline__ int holder(long g) const { return (int)(((g + 1) * Q + W - 1) / W) - 1; }
  __device__ __forceinline__ bool idle(int c) const { return (long)c * W / Q == (long)(c + 1) * W / Q; }
  __device__ __forceinline__ GemmWork item(const Src &src, int i) const {
    GemmWork w;
    w.upto = 0;
    if constexpr (Cfg::STREAM_K) {
      w.s = 0;
      if (i < dp) {
        raster(i * P + cta, t.mu, t.nu, Cfg::GROUP, w.bm, w.bn);
        w.kb0 = 0; w.kb1 = kblocks; w.split = false;
      } else {
        const int j = j0 + i - dp;
        const long first = (long)j * kblocks;
        raster(D + j, t.mu, t.nu, Cfg::GROUP, w.bm, w.bn);
        w.kb0 = (int)((g0 > first ? g0 : first) - first);
        w.kb1 = (int)((g1 < first + kblocks ? g1 : first + kblocks) - first);
        w.split = w.kb0 > 0 || w.kb1 < kblocks;
        if (w.kb0 == 0 && w.kb1 < kblocks) w.upto = holder(first + kblocks - 1);
      }
    } else if constexpr (Cfg::SPLIT_TAIL) {
      const bool split = i >= dp;
      w.s = 0;
      raster(split ? D + t.cid : i * P + cta, t.mu, t.nu, Cfg::GROUP, w.bm, w.bn);
      w.split = split;
      if (split) split_range<S>(kblocks, crank, w.kb0, w.kb1);
      else { w.kb0 = 0; w.kb1 = kblocks; }
    } else {
      t.at(src, t.cid + i * t.clusters, w.s, w.bm, w.bn);
      w.split = S > 1;
      split_range<S>(kblocks, crank, w.kb0, w.kb1);
    }
    return w;
  }
};

}  // namespace weft
