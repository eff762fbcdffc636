-- expect: split_k = 2: split-K adds partial sums of cooperative tiles; use mma = "cooperative"
-- Pingpong's two warpgroups hold different tiles; the partial-sum exchange is per cooperative tile.
return { family = "gemm", tile = { m = 128, n = 128, k = 64 }, mma = "pingpong", split_k = 2 }
