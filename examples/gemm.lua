-- weft's own GEMM on one GPU: C[M,N] = A[M,K] . B (bf16 in, f32 accumulate, bf16 out), the
-- compute core of the fused all-gather + GEMM.  Persistent, warp-specialised: a TMA warp fills
-- a 3-stage shared-memory ring, two WGMMA warpgroups consume it, and C leaves through shared
-- memory by TMA.  `weft run` checks it against
-- a CPU reference and times it beside cuBLAS (cublasLt) in the same run.
--   b_layout = "col": B stored N x K (a linear layer's weight)
return {
  family = "gemm",
  dtype = "bf16",
  b_layout = "row",
  tile = { m = 128, n = 256, k = 64 },
  stages = 3,
  consumers = 2,
  epilogue = "tma",
}
