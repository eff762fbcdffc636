-- expect: mma = "pingpong": pingpong alternates two consumer warpgroups: set consumers = 2
-- Pingpong hands whole tiles to two consumer warpgroups in turn; with one there is no turn to take.
return { family = "gemm", tile = { m = 128, n = 128, k = 64 }, consumers = 1, mma = "pingpong" }
