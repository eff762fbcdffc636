-- expect: with swap_ab, tile.m is the WGMMA's n: 8, 16, 24, ..., 256
-- tile.m is the WGMMA's n dimension when swapped: a multiple of 8.
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 12, n = 64, k = 64 },
         consumers = 1 }
