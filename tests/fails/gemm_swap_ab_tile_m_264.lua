-- expect: tile.m = 264: with swap_ab, tile.m is the WGMMA's n: 8, 16, 24, ..., 256
return { family = "gemm", b_layout = "col", swap_ab = true, epilogue = "direct", tile = { m = 264, n = 64, k = 64 },
         consumers = 1 }
