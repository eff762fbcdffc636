-- expect: tile.m = 96: wgmma tiles take m in {64, 128, 256}
-- WGMMA works in 64-row groups; a consumer owns whole groups.
return { family = "gemm", tile = { m = 96, n = 256, k = 64 } }
