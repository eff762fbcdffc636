-- expect: stages = 8: needs 394368 bytes of shared memory per block, at most 232448 (227 KB) on sm_90
-- expect: use fewer stages or a smaller tile
-- 8 * (128 + 256) * 128 bytes of ring + 16 * 8 of barriers + 1024 of alignment.
return { family = "gemm", tile = { m = 128, n = 256, k = 64 }, stages = 8 }
