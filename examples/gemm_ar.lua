-- GEMM + allreduce, fused (the row-parallel linear layer, every rank keeping the whole output):
-- rank r of P holds A_r = A[:, K_r] (M x K/P, given as --k K/P) and B_r = B[K_r, :] (K/P x N);
-- every rank ends with all of sum_p A_p . B_p, in one persistent kernel.  As gemm_rs, each
-- finished f32 tile goes to the rank that owns its rows, which folds the P partials in rank order
-- and rounds once; then every rank reads the other owners' rounded rows: the same bits on every
-- rank and every run.
--   weft run examples/gemm_ar.lua                          (one rank: the plain GEMM's epilogue)
--   mpirun -np 4 weft run examples/gemm_ar.lua             (four ranks, one GPU each or MPS)
--   ... --set comm=multimem --set fallback=emulate         (the multimem schedule's unicast twin)
return {
  family = "gemm_ar",
  dtype = "bf16",
  b_layout = "row",
  tile = { m = 128, n = 256, k = 64 },
  stages = 4,
  consumers = 2,
}
