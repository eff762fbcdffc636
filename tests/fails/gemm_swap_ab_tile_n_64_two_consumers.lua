-- expect: tile.n = 64: with swap_ab, tile.n is B's rows in 64-row WGMMA groups, split over the 2 consumer warpgroup(s): 128 or 256
-- One 64-row group of B cannot be split over two consumer warpgroups.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 16, n = 64, k = 64 },
         consumers = 2 }
