-- expect: mma = "kturns": must be one of "cooperative", "pingpong"
return { family = "gemm_rs", tile = { m = 64, n = 128, k = 64 }, mma = "kturns" }
