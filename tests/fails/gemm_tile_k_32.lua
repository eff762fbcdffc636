-- expect: tile.k = 32: wgmma tiles take k = 64: one 128-byte swizzled row
return { family = "gemm", tile = { m = 128, n = 256, k = 32 } }
