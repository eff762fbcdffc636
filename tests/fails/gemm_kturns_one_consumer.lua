-- expect: consumers = 1: mma = "kturns" is two consumer warpgroups taking turns along K: consumers = 2
-- Turns along K need a second warpgroup to take them.
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 64, k = 64 }, consumers = 1, mma = "kturns", stages = 8 }
