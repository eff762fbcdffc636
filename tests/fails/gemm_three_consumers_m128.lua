-- expect: consumers = 3: three consumers take tile.m = 192, one 64-row WGMMA group each (it is 128)
return { family = "gemm", tile = { m = 128, n = 192, k = 64 }, consumers = 3 }
