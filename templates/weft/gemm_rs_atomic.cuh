// weft/gemm_rs_atomic.cuh: GEMM + reduce-scatter with reduce = "atomic" (family gemm_rs): the
// partial tiles are added into their owner's one f32 staging by the TMA bulk reduce-add
// (ParallelKittens' scheme) instead of landing in P slots for a rank-order fold.  The sum's order
// is the order in which the adds reach the owner's memory, which depends on timing: the result
// is NOT bit-stable from run to run (it is within the GEMM's f32 tolerance).  The GEMM, the walk
// (own shard last), the DONE signal and its waits are weft/gemm_rs.cuh's (RsBulk derives
// from RsPartials); what differs is the data path.
//
// Per launch at epoch e, h = e % 2, on rank r; S_q[h] is rank q's data half h: ONE f32 region
// of Ms x N (Ms = M / P), zero before the epoch's first add:
//   1. GEMM   as ordered: shards in the order r+1, ..., r (own last).  Each finished tile of
//             shard q goes, per consumer warp, as slices of 8 rows x 64 f32: the lanes store
//             their accumulators into the warp's slice in shared memory (the ring is the
//             producer's, still loading the next tile: gen/core/gemm.lua's layout gives each
//             consumer warp a slice of its own, SMEM_RS), fence.proxy.async.shared::cta (the
//             bulk copy reads shared memory through the async proxy: the generic stores must be
//             ordered before it), __syncwarp, then lanes 0..7 each add one row of the slice into
//             S_q[h] with cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 (the 1-D
//             form: one row of up to 256 bytes; n is a multiple of 8 and the staging 256-byte
//             aligned, so every row starts on 16 bytes and its length is a multiple of 32; rows
//             past the shard and columns past n are simply not issued, which the tensor form
//             would also have done, but with a tensor map per peer and half).  Before a slice is
//             rewritten its issuing lanes wait for the previous bulk reads (wait_group.read 0).
//   2. DONE   each issuing lane waits for its bulk adds to COMPLETE (cp.async.bulk.wait_group 0:
//             the writes into S_q[h] are performed), then fence.proxy.async.global, which orders
//             those async-proxy writes before this thread's later generic operations; the named
//             barrier over the consumers orders every thread's before the st.release.sys of DONE(e)
//             (send_signal; the release is cumulative over what the barrier ordered), so an owner
//             that acquires DONE(e) from block b of rank p (ld.relaxed polls, then
//             fence.acq_rel.sys) sees every add block b of rank p made.  The adds are performed
//             at the owner's memory (atomic per element), so adds from several ranks and from
//             the owner itself into one element never lose each other.
//   3. convert  every CTA waits for DONE(e) from every block of every rank, then, for its share
//             of the Ms x N: loads 8 floats, rounds them to T into c, and stores zeros over
//             them (the zeroing for epoch e + 2, the next use of half h).
// Reuse: who adds into S_q[h] next?  Any rank p, at epoch e + 2 only (e + 1 uses the other
// half).  p's launch e + 2 starts after its launch e + 1 finished, which waited for DONE(e + 1)
// from every block of q; q's blocks send DONE(e + 1) in launch e + 1, after q's launch e (whose
// conversion and zeroing of S_q[h] are in it) finished, in stream order.  So q's zeros are
// ordered before p's acquire of DONE(e + 1), and p's launch begins with fence.proxy.async.global
// (the constructor), which orders what p's generic view has acquired before its async-proxy adds.
// The first epochs: weft_symm_alloc zeroes the whole buffer (runtime/core/symm.c) and barriers
// before any rank may signal.  Every launch adds into and then zeroes the same Ms x N prefix of
// the half, so after a complete launch the whole half is zero again, whatever shape comes next.
// A wait that times out skips this rank's conversion (c keeps what it held); the staging then
// holds partial sums, and the communicator is unusable (weft_comm_check: destroy it), as in
// ordered.
// ranks = 1 (Cfg::NP == 1): the plain GEMM's direct epilogue into c, as ordered: no staging, no
// signal, and no slices in shared memory (atomic and ordered are the same kernel there).
//
// reduce = "ordered" with comm = "tma" takes the same slices and bulk path with a plain bulk copy
// (cp.async.bulk.global.shared::cta) into the owner's slot r of S_q[h] (the ordered layout: P
// slots), the same completion and fence before DONE, then gemm_rs.cuh's rank-order fold: the
// ordered protocol and bits, with the stores made by the TMA unit instead of the threads.
#pragma once
#include "weft/gemm_rs.cuh"

namespace weft {

// one row of f32 from shared memory added into global memory (this GPU's or a peer's mapped)
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, u32 src, u32 bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_copy_f32(float *dst, u32 src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_wait_done() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void sts_f32x2(u32 a, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(x), "f"(y) : "memory");
}

// ADD: reduce = "atomic" (bulk reduce-adds into the one sum); else ordered's slots by bulk copies.
template <class Cfg, bool ADD> struct RsBulk : RsPartials<Cfg> {
  using Base = RsPartials<Cfg>;
  using T = typename Cfg::T;
  static constexpr int ROWS = 8, COLS = 64, LD = 72;   // gen/core/gemm.lua's RS_ROWS, RS_COLS, RS_LD
  __device__ __forceinline__ RsBulk(const Comm &cm_, long m_) : Base(cm_, m_) {
    if constexpr (Cfg::NP != 1) fence_proxy_async_global();   // (the reuse argument above)
  }
  // one consumer warpgroup's rows of a finished tile (rows r0.. of shard s, column block bn)
  template <class C, int MR>
  __device__ __forceinline__ void store(T *c, int, long rows, long n, long r0, int s, int bn, const float (&acc)[MR][C::BN / 2]) {
    if constexpr (Cfg::NP == 1) {
      store_tile<T, C::BN, MR>(c, n, r0, rows - r0, (long)bn * C::BN, acc);
    } else {
      extern __shared__ char smem_raw[];
      const char *base = (const char *)(((unsigned long long)smem_raw + 1023) & ~1023ull);   // as Ring::carve
      const int lane = threadIdx.x % 32, wrow = 16 * ((threadIdx.x % 128) / 32);   // the warp's rows in each m64 group
      const u32 slice = smem_addr(base + Cfg::SMEM_RS + (threadIdx.x / 32 - 4) * (ROWS * LD * 4));
      const u32 mine = slice + ((lane / 4) * LD + 2 * (lane % 4)) * 4;   // this lane's pair in row lane / 4
      // the consumer's row 0 in owner s's staging (ordered: in slot r, this rank's)
      float *dst = this->half_of(this->cm.peers[s]) + (ADD ? 0 : (long)this->cm.rank * rows * n) + r0 * n;
      const long rows_valid = rows - r0, col0 = (long)bn * C::BN;
#pragma unroll
      for (int mi = 0; mi < MR; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long r = mi * 64 + wrow + 8 * h + lane;   // the row lane (< 8) adds
#pragma unroll
          for (int cc = 0; cc < C::BN / COLS; ++cc) {
            const long col = col0 + cc * COLS;
            if (col >= n) break;
            if (lane < ROWS) bulk_wait_read();   // the slice's last rows were read
            __syncwarp();
#pragma unroll
            for (int j = 0; j < COLS / 8; ++j)
              sts_f32x2(mine + 32 * j, acc[mi][4 * (cc * COLS / 8 + j) + 2 * h], acc[mi][4 * (cc * COLS / 8 + j) + 2 * h + 1]);
            fence_proxy_async_shared();
            __syncwarp();
            if (lane < ROWS && r < rows_valid) {
              const long w = n - col < COLS ? n - col : COLS;
              if constexpr (ADD) bulk_reduce_add_f32(dst + r * n + col, slice + lane * LD * 4, (u32)(w * 4));
              else bulk_copy_f32(dst + r * n + col, slice + lane * LD * 4, (u32)(w * 4));
              bulk_commit();
            }
          }
        }
      }
    }
  }
  // every consumer thread, after its last tile: its adds complete, DONE to every rank, then this
  // CTA's share of the conversion (and the zeroing)
  template <class C> __device__ __forceinline__ void consumers_done(T *c, long rows, long n) {
    if constexpr (Cfg::NP == 1) return;
    const Comm &cm = this->cm;
    const int P = cm.ranks<Cfg::NP>(), rank = cm.rank;
    const int tid = threadIdx.x - 128;
    const u64 e = this->epoch();
    if (threadIdx.x % 32 < ROWS) {   // the lanes that issued adds
      bulk_wait_done();
      fence_proxy_async_global();
    }
    if constexpr (!ADD) {   // ordered: DONE and the rank-order fold (its barrier orders the above first)
      Base::template consumers_done<C>(c, rows, n);
      return;
    }
    bar_sync(BAR_CONSUMERS, Base::NT);   // every consumer's adds complete before the release
    if (tid < P) send_signal(cm, SIG_DONE, tid, rank, e);
    int stop = 0;
    for (int p = 0; p < P && !stop; ++p) stop = wait_blocks(cm, SIG_DONE, p, e, tid, Base::NT);
    if (bar_or(BAR_CONSUMERS, Base::NT, stop)) return;
    U4 *mine = (U4 *)this->half_of(cm.peers[rank]);
    const long n8 = rows * n / 8;   // (n is a multiple of 8)
    for (long i = (long)blockIdx.x * Base::NT + tid; i < n8; i += (long)gridDim.x * Base::NT) {
      const U4 v0 = mine[2 * i], v1 = mine[2 * i + 1];
      float f[8];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        f[k] = __uint_as_float((&v0.x)[k]);
        f[4 + k] = __uint_as_float((&v1.x)[k]);
      }
      ((U4 *)c)[i] = pack_f32<T>(f);
      mine[2 * i] = U4{0u, 0u, 0u, 0u};
      mine[2 * i + 1] = U4{0u, 0u, 0u, 0u};
    }
  }
};

// The kernel's body for comm = "tma" (templates/gemm_rs.cu): reduce = "atomic", or ordered's slots.
template <class Cfg>
__device__ __forceinline__ void gemm_rs_bulk_wgmma(typename Cfg::T *c, long m, long n, long k, const TensorMap &ta,
                                                   const TensorMap &tb, const Comm &cm) {
  static_assert(!Cfg::PDL && !Cfg::EPI_TMA && !Cfg::SPLIT_TAIL, "gemm_rs: no TMA-store epilogue, no pdl, no split tail");
  static_assert(!Cfg::FOLD_TILES, "gemm_rs: comm = \"tma\" folds after");
  RsBulk<Cfg, Cfg::ATOMIC> src(cm, m);
  gemm_persistent<Cfg>(c, m, n, k, ta, tb, nullptr, src);
}

}  // namespace weft
