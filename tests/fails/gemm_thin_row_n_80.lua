-- expect: tile.n = 80: with b_layout = "row", n in {64, 128, 192, 256} (B arrives in 64-column boxes)
-- A thin tile takes any multiple of 16 only where B is column-major (row-major B comes in 64-column boxes).
return { family = "gemm", b_layout = "row", tile = { m = 16, n = 80, k = 64 }, consumers = 1 }
