-- expect: stream_k = true: stream-K adds partial sums of cooperative tiles: mma = "cooperative"
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 64, k = 64 }, consumers = 2, mma = "kturns", stream_k = true }
