-- expect: tile.n = 192: with b_layout = "row" and mma = "cooperative_n" each consumer's half of the tile is whole 64-column boxes of B
-- Row-major B arrives in 64-column boxes: 192 splits into two halves of 96 columns, half a box each.
return { family = "gemm", tile = { m = 192, n = 192, k = 64 }, mma = "cooperative_n", stages = 4 }
