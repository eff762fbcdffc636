-- expect: mma = "pingpong": a tile under 64 rows is one WGMMA group: mma = "cooperative", consumers = 1
return { family = "gemm", b_layout = "col", tile = { m = 32, n = 128, k = 64 }, consumers = 2, mma = "pingpong" }
