-- expect: with swap_ab, 256 x 256 over 1 consumer warpgroup(s) is 512 f32 accumulators per thread; at most 128 fit (use consumers = 2, a smaller tile.m or tile.n)
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 256, n = 256, k = 64 },
         consumers = 1 }
