-- expect: scalar tiles take m, n in {16, 32, 64} and k in {8, 16, 32}
-- expect: 128x128x16
return { family = "ag_gemm", variant = "threadload_gather", tile = { m = 128, n = 128, k = 16 } }
