-- expect: 256 x 256 over 2 consumer warpgroup(s) is 256 f32 accumulators per thread; at most 160 fit (use a smaller tile: m x n <= 40960)
-- 256 * 256 / (128 threads * 2 consumers) = 256 f32 registers each: beyond the 232-register budget
-- (two cooperative consumers of family gemm hold at most 160: 256 x 160).
return { family = "gemm", tile = { m = 256, n = 256, k = 64 }, consumers = 2 }
