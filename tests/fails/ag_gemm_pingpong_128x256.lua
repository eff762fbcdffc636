-- expect: tile = "128x256x64": 128 x 256 over 1 consumer warpgroup(s) is 256 f32 accumulators per thread; at most 128 fit
-- expect: (pingpong gives each warpgroup a whole tile: m x n <= 16384, or mma = "cooperative")
-- The shipped tile with pingpong: one warpgroup would hold all 128 x 256 accumulators,
-- 128 * 256 / 128 threads = 256 f32 registers each.
return { family = "ag_gemm", variant = "fused", tile = { m = 128, n = 256, k = 64 }, consumers = 2, mma = "pingpong" }
