-- expect: stages = 7: needs 248960 bytes of shared memory per block, at most 232448
-- expect: also stage 2304 bytes of f32 rows per consumer warp
-- the ring fits for reduce = "ordered" (230512 bytes); atomic's per-warp slices (8 warps x 2304) do not
return { family = "gemm_rs", reduce = "atomic", tile = { m = 128, n = 128, k = 64 }, stages = 7 }
