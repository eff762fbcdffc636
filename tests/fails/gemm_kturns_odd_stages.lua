-- expect: stages = 7: mma = "kturns" gives each consumer warpgroup every other stage
-- expect: an even count, 4 or more
-- Each warpgroup reads the stages of its own parity; an odd ring would hand a stage to both in turn.
return { family = "gemm", b_layout = "col", tile = { m = 64, n = 64, k = 64 }, consumers = 2, mma = "kturns", stages = 7 }
