-- expect: tile.n = 96: wgmma tiles take n in {64, 128, 192, 256}
-- n = 96 is a legal m64nNk16 shape, but B arrives in 64-column TMA boxes.
return { family = "ag_gemm", variant = "fused", tile = { m = 128, n = 96, k = 64 } }
