-- All-gather + GEMM, fused: C[M,N] = A[M,K] . B[K,N], A row-sharded over the ranks (rank r owns
-- rows r*M/P .. (r+1)*M/P - 1), every rank computing all of C in one persistent kernel.
-- A WGMMA GEMM (128 x 256 tiles, 4-stage TMA ring, 2 consumer warpgroups) starts on the rank's
-- own shard while the other shards arrive: the producer warpgroup's spare warps pull each peer's
-- shard into this rank's symmetric buffer once the peer signalled it ready (comm = "threadload",
-- the default), and TMA feeds the tensor cores from there.  comm = "tma" reads peers' memory
-- with TMA directly (correct, but 3-4x slower across GPUs: bench/RESULTS.md); comm = "multimem"
-- with fallback = "emulate" has the owner push its shard to every rank (the fastest measured).
--   weft run examples/ag_gemm.lua                       (one rank)
--   mpirun -np 4 weft run examples/ag_gemm.lua          (four ranks, one GPU each or MPS)
--   --set variant=gather_then_gemm                      (the plain GEMM is family = "gemm": examples/gemm.lua)
--   --set variant=naive_remote | threadload_gather | multimem_gather (with fallback=emulate),
--         with --set tile=auto (the seed's scalar kernels take scalar tiles)
return {
  family = "ag_gemm",
  variant = "fused",
  dtype = "bf16",
  b_layout = "row",
  tile = { m = 128, n = 256, k = 64 },   -- "auto": this for wgmma, 32 x 32 x 16 for the scalar variants
  stages = 4,
  consumers = 2,
}
