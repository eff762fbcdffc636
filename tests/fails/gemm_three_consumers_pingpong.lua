-- expect: consumers = 3: three consumers split each tile by rows: mma = "cooperative"
return { family = "gemm", tile = { m = 192, n = 192, k = 64 }, consumers = 3, stages = 3, mma = "pingpong" }
