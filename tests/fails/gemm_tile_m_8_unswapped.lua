-- expect: tile.m = 8: wgmma tiles take m in {64, 128, 256} (whole 64-row WGMMA groups); with b_layout = "col", swap_ab = true takes m = 8, 16, ..., 256
-- An 8-row tile is a swapped one: the message says how to get it.
return { family = "gemm", b_layout = "col", epilogue = "direct", tile = { m = 8, n = 64, k = 64 }, consumers = 1 }
