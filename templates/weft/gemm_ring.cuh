// weft/gemm_ring.cuh: the stage ring between the TMA producer and the WGMMA consumers.
// STAGES buffers (an A stage of BM rows x 128 bytes, then a B stage of BN x 128 bytes, in the
// 128-byte swizzle TMA writes and WGMMA reads; a thin tile's stage padded to the 64 rows its
// WGMMA reads), and per stage two mbarriers:
//   full[s]   the producer announces a stage's bytes (expect_tx); TMA's complete_tx ends the
//             phase, so a consumer that sees it may read the stage;
//   empty[s]  every consumer warp that read stage s arrives (in every CTA that shares it by
//             multicast); the producer refills it only once the phase completed.
// The offsets are Cfg's constants, computed once by gen/core/gemm.lua's layout() (and checked
// there by tests/lua); nothing here recomputes them.  Producer and consumers each walk the
// ring with a Pipe of their own: stage s and the phase parity of its current fill.
#pragma once
#include "weft/bulk.cuh"
#include "weft/gemm.cuh"
#include "weft/types.cuh"

namespace weft {

template <class Cfg> struct Ring {
  static_assert(Cfg::SMEM_FULL % 8 == 0 && Cfg::SMEM_STAGE % 1024 == 0 && Cfg::SMEM_B % 1024 == 0,
                "the layout keeps stages on the 1024 bytes of their swizzle and barriers on 8");
  // what full[s] expects per fill: A's box and B's (a thin tile's stage is longer: 64 rows at least)
  static constexpr u32 STAGE_BYTES = Cfg::SMEM_LOAD;
  static_assert(STAGE_BYTES <= Cfg::SMEM_STAGE, "a stage holds its loads");
  char *base;   // 1024-byte aligned: the swizzle pattern repeats every 1024 bytes
  u64 *full, *empty;
  __device__ __forceinline__ char *a(int s) const { return base + s * Cfg::SMEM_STAGE; }
  __device__ __forceinline__ char *b(int s) const { return base + s * Cfg::SMEM_STAGE + Cfg::SMEM_B; }
  // (the layout's total leaves 1024 bytes of slack for this alignment)
  __device__ __forceinline__ void carve(char *smem) {
    base = (char *)(((unsigned long long)smem + 1023) & ~1023ull);
    full = (u64 *)(base + Cfg::SMEM_FULL);
    empty = (u64 *)(base + Cfg::SMEM_EMPTY);
  }
  // One thread, before the CTA's first sync: a stage is full after the producer's one arrival
  // (plus its bytes); empty after one arrival from each of `readers` warps.
  __device__ __forceinline__ void init(int readers) {
    for (int s = 0; s < Cfg::STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], readers);
    }
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

}  // namespace weft
