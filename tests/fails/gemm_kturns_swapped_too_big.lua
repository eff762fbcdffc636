-- expect: with swap_ab, 256 x 64 over 1 consumer warpgroup(s) is 128 f32 accumulators per thread; at most 96 fit
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 256, n = 64, k = 64 },
         consumers = 2, mma = "kturns" }
