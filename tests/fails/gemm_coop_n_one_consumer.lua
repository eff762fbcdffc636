-- expect: consumers = 1: mma = "cooperative_n" splits each tile's columns over two consumer warpgroups: consumers = 2
return { family = "gemm", tile = { m = 64, n = 128, k = 64 }, mma = "cooperative_n", consumers = 1 }
