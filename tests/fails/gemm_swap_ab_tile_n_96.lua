-- expect: tile.n = 96: with swap_ab, tile.n is B's rows in 64-row WGMMA groups, split over the 1 consumer warpgroup(s): 64, 128, 192 or 256
-- 96 is a legal width for column-major B unswapped; swapped, B's rows come in whole 64-row WGMMA groups.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 96, k = 64 },
         consumers = 1 }
