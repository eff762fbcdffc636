-- expect: consumers = 3: three consumers run unsplit tiles: split_k = 1
return { family = "gemm", tile = { m = 192, n = 192, k = 64 }, consumers = 3, stages = 3, split_k = 2 }
