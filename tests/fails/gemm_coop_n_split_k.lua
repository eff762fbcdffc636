-- expect: split_k = 2: mma = "cooperative_n" runs unsplit tiles: split_k = 1
-- The two consumers each hold half a tile's columns; split-K's hand-over sums whole row-split tiles.
return { family = "gemm", tile = { m = 128, n = 128, k = 64 }, mma = "cooperative_n", split_k = 2 }
