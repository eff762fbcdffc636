-- expect: tile.m = 16: wgmma tiles take m in {64, 128, 256}
-- Thin tiles are family gemm's alone: the fused kernels' A rows arrive per shard in 64-row groups.
return { family = "ag_gemm", variant = "fused", b_layout = "col", tile = { m = 16, n = 128, k = 64 }, consumers = 1 }
