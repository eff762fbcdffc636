-- expect: tile.n = 176: wgmma tiles take n in {64, 128, 192, 256}
-- Only family gemm's epilogue has C's narrow last chunk; the fused kernel's C map is per shard.
return { family = "ag_gemm", variant = "fused", b_layout = "col", tile = { m = 128, n = 176, k = 64 } }
