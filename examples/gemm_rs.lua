-- GEMM + reduce-scatter, fused (the row-parallel linear layer): rank r of P holds A_r = A[:, K_r]
-- (M x K/P, given as --k K/P) and B_r = B[K_r, :] (K/P x N); it ends with rows r*M/P ..
-- (r+1)*M/P - 1 of sum_p A_p . B_p, in one persistent kernel.  The WGMMA GEMM walks the tiles
-- of the other ranks' rows first (rank r+1's, r+2's, ..., its own last) and pushes each finished
-- tile as f32 to its owner; once every CTA of every rank has said so, each rank folds its P
-- partials in rank order and rounds once: the same bits on every run.
--   weft run examples/gemm_rs.lua                          (one rank: the plain GEMM's epilogue)
--   mpirun -np 4 weft run examples/gemm_rs.lua             (four ranks, one GPU each or MPS)
--   mpirun -np 4 weft run examples/gemm_rs.lua --set reduce=atomic
--       (TMA bulk reduce-adds into one f32 sum per owner: less staging, NOT bit-stable)
return {
  family = "gemm_rs",
  dtype = "bf16",
  b_layout = "row",
  tile = { m = 128, n = 256, k = 64 },
  stages = 4,
  consumers = 2,
}
