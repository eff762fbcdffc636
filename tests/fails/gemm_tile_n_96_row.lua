-- expect: tile.n = 96: wgmma tiles take n in {64, 128, 192, 256}
-- expect: with b_layout = "col", any multiple of 16 up to 256
-- Row-major B arrives in 64-column boxes; only column-major B takes any multiple of 16.
return { family = "gemm", b_layout = "row", tile = { m = 128, n = 96, k = 64 } }
