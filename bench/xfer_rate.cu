// bench/xfer_rate.cu: how fast a split-K cluster can sum its f32 partial tiles, each way weft
// could move them, without the GEMM around it.  Built with nvcc by bench/xfer_rate.sh (not by
// NVRTC: it is a measuring tool, not a kernel weft emits).
//
// Why: at one k-block (130 x 1536 x 64) weft's 136 x 64 split 4 took 7.4 us against 3.6 unsplit
// (eighteenth session): ~4 us that do not depend on K.  The tree moves a 34.8 KB partial twice,
// one step after the other; if distributed shared memory moved ~20 GB/s into an SM that alone
// would be ~3.5 us.  This measures the rate of each transport at the GEMM's sizes, so the sum to
// build is chosen by measurement:
//   none   the flat protocol's barriers alone (full, go; no data): the latency floor
//   tree   split-K's tree (weft/gemm_splitk.cuh's combine): log2(S) dependent steps of a whole
//          partial through st.shared::cluster
//   flat   every CTA writes each peer's slice into the peer's shared memory (scatter), one step
//   l2     the same slices through global memory (st.global, ld.global.cg: L2), handed over by
//          the same mbarriers (arrive.release.cluster / try_wait.acquire.cluster)
//   bulk   the slices staged in the CTA's own shared memory, then one cp.async.bulk per peer into
//          the peer's shared memory (the copy engine; completion counted in bytes)
// Each CTA is one consumer warpgroup (128 threads) holding J quads (4 floats) per thread, as a
// swapped tile of 8 J rows of A by 64 rows of B does (J = 17: 136 x 64, 34.8 KB).  Every launch
// sums R tiles back to back (slots reused: the go barrier), and every sum is checked (small
// integers: exact in f32).  One CTA per SM (200 KB of shared memory each), the grid in clusters
// of S.  Printed per case: the exchange's time per tile in the slowest CTA (cycles, and us at the
// SM clock measured in the same run), the bytes the busiest CTA sends per us, the whole kernel
// per launch (events around back-to-back launches), and the check.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "weft/cluster.cuh"
#include "weft/gemm_streamk.cuh"   // (bar_sync, st_f4, ld_cg_f4, the bulk groups: the GEMM's own)

using namespace weft;

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "xfer_rate: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);   \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

enum Mode { NONE, TREE, FLAT, L2, BULK, N_MODES };

// How ct 0 hands over to peers: XFER_ONE_FENCE=0, an arrive.release.cluster per peer (each a
// fence); 1, one fence.acq_rel.cluster, then a relaxed arrive per peer (built as xfer_rate_fence1:
// what weft/gemm_splitk.cuh's scatter does).
// XFER_GO_PLAIN=1 (xfer_rate_go): the flat ways' go ("my slots are read") with the default arrive
// (release at CTA scope), no fence at cluster scope: a timing probe only -- a .cta release does not
// synchronize with the peer's .cluster acquire (its scope leaves the peer out: PTX ISA, memory
// consistency model), so the GEMM must not hand over this way.
#ifndef XFER_ONE_FENCE
#define XFER_ONE_FENCE 0
#endif
#ifndef XFER_GO_PLAIN
#define XFER_GO_PLAIN 0
#endif
__device__ __forceinline__ void handover_begin() {
  if (XFER_ONE_FENCE) fence_release_cluster();
}
__device__ __forceinline__ void handover(u64 *bar, u32 cta) {
  if (XFER_ONE_FENCE) mbar_arrive_relaxed_cluster(bar, cta);
  else mbar_release_cluster(bar, cta);
}
static const char *const mode_names[] = {"none", "tree", "flat", "l2", "bulk"};
constexpr int NT = 128;
constexpr int SMEM = 200 * 1024;   // one CTA per SM, as the GEMM's rings make it
constexpr size_t WS_BYTES = 64u << 20;   // l2's slots

__device__ __forceinline__ void bar_sync_nt() { bar_sync(1, NT); }
__device__ __forceinline__ u64 clock_now() {
  u64 c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}
__device__ __forceinline__ void sts_f4(u32 addr, float4 v) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
// (the copy engine from this CTA's shared memory into a peer's: the GEMM has no such copy)
__device__ __forceinline__ void bulk_to_peer(u32 dst, u32 src, u32 bytes, u32 peer_bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "r"(src), "r"(bytes), "r"(peer_bar)
               : "memory");
}

// What CTA `rank` of cluster c holds in quad j, lane e, for tile t of launch seq: small integers
// (exact sums), different in every launch and tile (a read of a slot's previous contents fails the
// check) and for every thread, quad, cluster and rank within the modulus (a prime above the block).
__device__ __forceinline__ float part(int c, int rank, int ct, int j, int e, int t, int seq) {
  return (float)((c * 5 + rank * 3 + ct + j * 11 + e * 131 + t * 13 + seq * 17) % 251 + rank);
}

template <int S, int J> struct Slices {
  static constexpr int QMAX = (J + S - 1) / S;
  static constexpr __host__ __device__ int lo(int r) { return r * J / S; }
  static constexpr __device__ int owner(int j) {
    int r = 0;
    while (r + 1 < S && lo(r + 1) <= j) ++r;
    return r;
  }
};

// One launch: R tiles summed by every cluster.  cycles[cta]: the CTA's exchange cycles over the R
// tiles; bad: wrong sums seen.  ws: L2's slots, per CTA (S - 1) * QMAX * NT quads.
template <int S, int J, int MODE>
__global__ void __launch_bounds__(NT) exchange(int R, int seq, float *ws, unsigned long long *cycles, unsigned *bad) {
  using SL = Slices<S, J>;
  extern __shared__ __align__(128) char smem[];
  u64 *bar = (u64 *)smem;                          // [0] full, [1] go
  float *red = (float *)(smem + 128);              // receive slots (tree: the whole partial)
  float *stage = red + (size_t)S * SL::QMAX * NT * 4 + (size_t)J * NT * 4;   // bulk: own copies of the peers' slices
  const int ct = threadIdx.x;
  const int rank = (int)cluster_ctarank();
  const int c = (int)cluster_id_x();
  const u32 red0 = smem_addr(red) + 16u * (u32)ct;
  const u32 slot_bytes = (u32)(SL::QMAX * NT * 16);
  if (ct == 0) {
    constexpr u32 FULL = MODE == TREE ? 1 : MODE == BULK ? 1 : S - 1;
    constexpr u32 GO = MODE == TREE ? 1 : S - 1;
    mbar_init(&bar[0], FULL);
    mbar_init(&bar[1], GO);
    fence_barrier_init();
  }
  cluster_sync();
  float acc[J][4];
  u32 got = 0;
  unsigned long long spent = 0;
  unsigned wrong = 0;
  for (int t = 0; t < R; ++t) {
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][e] = part(c, rank, ct, j, e, t, seq);
    bar_sync_nt();
    const u64 t0 = clock_now();
    bool mine[J];
#pragma unroll
    for (int j = 0; j < J; ++j) mine[j] = MODE == TREE ? rank == 0 : SL::owner(j) == rank;
    if constexpr (MODE == TREE) {
      int l = 1;
      for (; l < S && (rank & l) == 0; l <<= 1) {
        if (rank + l >= S) continue;
        if (ct == 0) { handover_begin(); handover(&bar[1], (u32)(rank + l)); }
        mbar_wait<true>(&bar[0], got & 1);
        ++got;
#pragma unroll
        for (int j = 0; j < J; ++j) {
          const float4 v = lds_f4(red0 + 16u * (u32)(j * NT));
          acc[j][0] += v.x; acc[j][1] += v.y; acc[j][2] += v.z; acc[j][3] += v.w;
        }
        bar_sync_nt();
      }
      if (rank != 0) {
        mbar_wait<true>(&bar[1], (u32)t & 1);
        const u32 dst = map_shared_rank(red0, (u32)(rank - l));
#pragma unroll
        for (int j = 0; j < J; ++j) st_shared_cluster_v4(dst + 16u * (u32)(j * NT), acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
        bar_sync_nt();
        if (ct == 0) { handover_begin(); handover(&bar[0], (u32)(rank - l)); }
      }
    } else {
      if (t > 0) mbar_wait<true>(&bar[1], (u32)(t - 1) & 1);   // every peer has read my slices of tile t - 1
      if constexpr (MODE == BULK) {
        if (ct == 0) mbar_arrive_expect(&bar[0], (u32)(S - 1) * slot_bytes);
      }
      const u32 stage0 = smem_addr(stage) + 16u * (u32)ct;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const int r = SL::owner(j);
        if (r == rank) continue;
        const int slot = rank < r ? rank : rank - 1;
        const int q = (slot * SL::QMAX + j - SL::lo(r)) * NT;
        const float4 v = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
        if constexpr (MODE == FLAT) st_shared_cluster_v4(map_shared_rank(red0, (u32)r) + 16u * (u32)q, v.x, v.y, v.z, v.w);
        if constexpr (MODE == L2) st_f4(ws + ((size_t)(c * S + r) * (S - 1) * SL::QMAX * NT + q) * 4 + ct * 4, v.x, v.y, v.z, v.w);
        if constexpr (MODE == BULK) sts_f4(stage0 + 16u * (u32)((r * SL::QMAX + j - SL::lo(r)) * NT), v);
      }
      if constexpr (MODE == BULK) fence_proxy_async_shared();
      bar_sync_nt();
      if (ct == 0) {
        if constexpr (MODE != BULK) handover_begin();
        for (int r = 0; r < S; ++r) {
          if (r == rank) continue;
          if constexpr (MODE == BULK) {
            const int slot = rank < r ? rank : rank - 1;
            bulk_to_peer(map_shared_rank(smem_addr(red) + (u32)slot * slot_bytes, (u32)r),
                         smem_addr(stage) + (u32)(r * SL::QMAX * NT * 16), slot_bytes,
                         map_shared_rank(smem_addr(&bar[0]), (u32)r));
          } else {
            handover(&bar[0], (u32)r);
          }
        }
        if constexpr (MODE == BULK) { bulk_commit(); bulk_wait_read(); }   // the staging may be rewritten next tile
      }
      if constexpr (MODE == BULK) mbar_wait<false>(&bar[0], (u32)t & 1);
      else mbar_wait<true>(&bar[0], (u32)t & 1);
#pragma unroll
      for (int j = 0; j < J; ++j) {
        if (!mine[j]) continue;
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int q = 0; q < S; ++q) {
          float4 v;
          const int at = ((q < rank ? q : q - 1) * SL::QMAX + j - SL::lo(rank)) * NT;
          if (q == rank) v = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
          else if constexpr (MODE == L2) v = ld_cg_f4(ws + ((size_t)(c * S + rank) * (S - 1) * SL::QMAX * NT + at) * 4 + ct * 4);
          else if constexpr (MODE == NONE) v = make_float4(0.f, 0.f, 0.f, 0.f);
          else v = lds_f4(red0 + 16u * (u32)at);
          if (q == 0) sum = v;
          else { sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w; }
        }
        acc[j][0] = sum.x; acc[j][1] = sum.y; acc[j][2] = sum.z; acc[j][3] = sum.w;
      }
      bar_sync_nt();
      if (ct == 0) {
        if (!XFER_GO_PLAIN) handover_begin();
        for (int r = 0; r < S; ++r) {
          if (r == rank) continue;
          if (XFER_GO_PLAIN) mbar_arrive_remote(&bar[1], (u32)r);
          else handover(&bar[1], (u32)r);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < J; ++j)   // the sums are done before the clock is read, not moved past it
      asm volatile("" : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3]));
    spent += clock_now() - t0;
    if constexpr (MODE != NONE) {
#pragma unroll
      for (int j = 0; j < J; ++j) {
        if (!mine[j]) continue;
        for (int e = 0; e < 4; ++e) {
          float want = 0.f;
          for (int q = 0; q < S; ++q) want += part(c, q, ct, j, e, t, seq);
          wrong += acc[j][e] != want;
        }
      }
    }
  }
  cluster_sync();   // no CTA leaves while a peer's arrivals or copies still target its shared memory
  if (wrong) atomicAdd(bad, wrong);
  if (ct == 0) cycles[blockIdx.x] = spent;
}

static int seq = 0;         // launches so far (every launch's values differ: part)
static unsigned failed = 0;  // wrong sums over every case

template <int S, int J, int MODE> static void run_one(int clusters, int R, int reps, float *ws, double ghz) {
  auto k = exchange<S, J, MODE>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = S;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(NT);
  cfg.dynamicSmemBytes = SMEM;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  int fit = 0;
  cfg.gridDim = dim3(S);
  CK(cudaOccupancyMaxActiveClusters(&fit, k, &cfg));
  if (clusters <= 0) clusters = fit;
  cfg.gridDim = dim3(clusters * S);
  const int G = clusters * S;
  if ((size_t)G * (S - 1) * Slices<S, J>::QMAX * NT * 16 > WS_BYTES) {
    fprintf(stderr, "xfer_rate: %d CTAs of S %d J %d do not fit the L2 slots\n", G, S, J);
    exit(1);
  }
  unsigned long long *cyc;
  unsigned *bad;
  CK(cudaMalloc(&cyc, sizeof(unsigned long long) * G));
  CK(cudaMalloc(&bad, sizeof(unsigned)));
  CK(cudaMemset(bad, 0, sizeof(unsigned)));
  std::vector<unsigned long long> h(G);
  std::vector<double> worst;
  for (int i = 0; i < 3; ++i) CK(cudaLaunchKernelEx(&cfg, k, R, seq++, ws, cyc, bad));   // heat
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < reps; ++i) {
    CK(cudaLaunchKernelEx(&cfg, k, R, seq++, ws, cyc, bad));
    CK(cudaMemcpy(h.data(), cyc, sizeof(unsigned long long) * G, cudaMemcpyDeviceToHost));
    worst.push_back((double)*std::max_element(h.begin(), h.end()) / R);
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) CK(cudaLaunchKernelEx(&cfg, k, R, seq++, ws, cyc, bad));
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  unsigned nbad = 0;
  CK(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
  std::sort(worst.begin(), worst.end());
  const double cycles = worst[worst.size() / 2];
  const double us = cycles / (ghz * 1e3);
  using SL = Slices<S, J>;
  // bytes the busiest CTA sends per tile: a tree's sender a whole partial; flat and l2 the peers'
  // slices (all but the smallest own slice); bulk whole slots, S - 1 of QMAX quads
  int least = J;
  for (int r = 0; r < S; ++r) least = std::min(least, SL::lo(r + 1) - SL::lo(r));
  const double quads = MODE == TREE ? J : MODE == NONE ? 0 : MODE == BULK ? (S - 1) * SL::QMAX : J - least;
  const double sent = quads * NT * 16;
  printf("xfer %-4s S %d J %2d partial_kb %5.1f ctas %3d fit_clusters %2d R %d exchange_cycles %8.0f exchange_us %6.2f "
         "sent_kb %5.1f gb_s %6.1f kernel_us %7.2f check %s\n",
         mode_names[MODE], S, J, J * NT * 16 / 1024.0, G, fit, R, cycles, us, sent / 1024.0, us > 0 ? sent / us / 1e3 : 0.0,
         ms * 1e3 / reps, nbad ? "FAIL" : "PASS");
  if (nbad) printf("xfer %s S %d J %d: %u wrong sums\n", mode_names[MODE], S, J, nbad);
  failed += nbad;
  CK(cudaFree(cyc));
  CK(cudaFree(bad));
}

template <int S, int J> static void run_modes(int clusters, int R, int reps, float *ws, double ghz) {
  run_one<S, J, NONE>(clusters, R, reps, ws, ghz);
  run_one<S, J, TREE>(clusters, R, reps, ws, ghz);
  run_one<S, J, FLAT>(clusters, R, reps, ws, ghz);
  run_one<S, J, L2>(clusters, R, reps, ws, ghz);
  run_one<S, J, BULK>(clusters, R, reps, ws, ghz);
}

// The SM clock while busy: a kernel that spins for a known number of cycles, timed with events.
__global__ void spin(unsigned long long n) {
  const u64 t0 = clock_now();
  while (clock_now() - t0 < n) {}
}
static double sm_ghz() {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  spin<<<132, 32>>>(1000000ull);
  CK(cudaEventRecord(e0));
  spin<<<132, 32>>>(20000000ull);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  return 20000000.0 / (ms * 1e6);
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 50;   // launches per case
  if (reps < 1 || reps > 100000) {
    fprintf(stderr, "xfer_rate: launches per case: %s: must be 1..100000\n", argv[1]);
    return 2;
  }
  CK(cudaSetDevice(0));
  const double ghz = sm_ghz();
  printf("xfer sm_clock_ghz %.3f\n", ghz);
  float *ws;
  CK(cudaMalloc(&ws, WS_BYTES));
  for (int R : {1, 8}) {
    // the eighteenth session's tiles as the GEMM launches them: 136 x 64 split 4 (24 clusters at
    // 130 x 1536), 72 x 64 split 2 (48), 104 x 64 split 3 (32 at 100 x 2048), 136 x 64 split 5
    // (ran ~2x slower: fit_clusters says whether 24 clusters of 5 fit at once); then as many
    // clusters as fit (0)
    run_modes<4, 17>(24, R, reps, ws, ghz);
    run_modes<2, 9>(48, R, reps, ws, ghz);
    run_modes<3, 13>(32, R, reps, ws, ghz);
    run_modes<5, 17>(24, R, reps, ws, ghz);   // 136 x 64 split 5 at 130 x 1536: 120 CTAs, if 24 clusters of 5 fit
    run_modes<4, 17>(0, R, reps, ws, ghz);
    run_modes<8, 21>(0, R, reps, ws, ghz);
  }
  CK(cudaFree(ws));
  if (failed) {
    fprintf(stderr, "xfer_rate: %u wrong sums (the cases marked FAIL): their times mean nothing\n", failed);
    return 3;
  }
  return 0;
}
