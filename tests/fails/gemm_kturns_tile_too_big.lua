-- expect: 128 x 128 over 1 consumer warpgroup(s) is 128 f32 accumulators per thread; at most 96 fit
-- expect: kturns gives each warpgroup a whole tile: m x n <= 12288
-- Each warpgroup holds the whole tile and adds the other's sums to it: 128 accumulators spilled.
return { family = "gemm", tile = { m = 128, n = 128, k = 64 }, consumers = 2, mma = "kturns" }
