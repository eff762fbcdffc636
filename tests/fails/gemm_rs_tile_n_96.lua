-- expect: tile.n = 96: wgmma tiles take n in {64, 128, 192, 256}
return { family = "gemm_rs", tile = { m = 128, n = 96, k = 64 } }
