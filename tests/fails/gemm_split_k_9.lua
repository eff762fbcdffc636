-- expect: split_k = 9: must be an integer in 1..8
-- split-K is a cluster of up to 8 CTAs (the portable cluster size).
return { family = "gemm", split_k = 9, tile = { m = 64, n = 128, k = 64 }, consumers = 1 }
