-- expect: consumers = 2: tile.m = 16 is one 64-row WGMMA group: consumers = 1
-- A thin tile is one m64 WGMMA group: a second consumer warpgroup would have no rows.
return { family = "gemm", b_layout = "col", tile = { m = 16, n = 128, k = 64 }, consumers = 2 }
