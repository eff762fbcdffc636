-- expect: tile.m = 12: a tile under 64 rows (family gemm, unswapped: the m64 WGMMA over tile.m rows of A) takes m = 8, 16, 24, ..., 56; or 64, 128, 256
-- A thin tile's A box comes in whole 8-row groups (the 128-byte swizzle's 1024-byte atoms).
return { family = "gemm", b_layout = "col", epilogue = "direct", tile = { m = 12, n = 64, k = 64 }, consumers = 1 }
