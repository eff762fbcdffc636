-- expect: tile.m = 192: wgmma tiles take m in {64, 128, 256} (whole 64-row WGMMA groups); family gemm also takes m = 192 with consumers = 3
return { family = "gemm", tile = { m = 192, n = 192, k = 64 }, consumers = 2 }
