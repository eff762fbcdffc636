-- expect: tile.n = 272: family gemm with b_layout = "col" takes n = 16, 32, ..., 256
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 272, k = 64 }, consumers = 1 }
