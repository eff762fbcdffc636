-- expect: tile.n = 320: wgmma tiles take n in {64, 128, 192, 256}
-- set: tile.n=320
return { family = "gemm", tile = { m = 128, n = 256, k = 64 } }
