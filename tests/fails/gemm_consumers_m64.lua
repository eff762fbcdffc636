-- expect: consumers = 2: tile.m = 64 has 1 64-row group(s); use consumers <= 1
return { family = "gemm", tile = { m = 64, n = 256, k = 64 }, consumers = 2 }
