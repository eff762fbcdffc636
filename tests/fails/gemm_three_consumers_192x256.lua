-- expect: 192 x 256 over 3 consumer warpgroup(s) is 128 f32 accumulators per thread; at most 96 fit (use a smaller tile: m x n <= 36864)
-- three consumers get 160 registers each of the 512 threads' launch allocation (weft/gemm_kernel.cuh)
return { family = "gemm", tile = { m = 192, n = 256, k = 64 }, consumers = 3, stages = 2 }
