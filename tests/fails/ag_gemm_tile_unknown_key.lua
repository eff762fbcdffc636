-- expect: (unknown key x)
-- expect: tile = { k = 64, m = 128, n = 256, x = 1 }:
return { family = "ag_gemm", tile = { m = 128, n = 256, k = 64, x = 1 } }
