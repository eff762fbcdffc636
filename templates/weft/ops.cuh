// weft/ops.cuh: combine functors over small f32 vectors.
// A family template defines the scalar operator `struct Op { identity(); combine(a, b); }`
// from its config (gen/core/ops.lua); these lift it to the W-wide values the reductions move.
#pragma once

namespace weft {

template <int W> struct Vals { float v[W]; };

// Elementwise lifting of a scalar operator.
template <class Op> struct Elementwise {
  template <int W> __device__ __forceinline__ static Vals<W> identity() {
    Vals<W> r;
#pragma unroll
    for (int i = 0; i < W; ++i) r.v[i] = Op::identity();
    return r;
  }
  template <int W> __device__ __forceinline__ static Vals<W> combine(const Vals<W> &a, const Vals<W> &b) {
    Vals<W> r;
#pragma unroll
    for (int i = 0; i < W; ++i) r.v[i] = Op::combine(a.v[i], b.v[i]);
    return r;
  }
};

}  // namespace weft
