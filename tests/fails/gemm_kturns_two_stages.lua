-- expect: stages = 2: mma = "kturns" gives each consumer warpgroup every other stage
-- With one stage each, a warpgroup would wait for a refill of the stage it still holds.
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 64, k = 64 }, consumers = 2, mma = "kturns", stages = 2 }
