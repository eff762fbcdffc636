-- expect: mma = "kturns": must be one of "cooperative", "pingpong"
-- Turns along K are family gemm's: the fused families' consumers keep their own schedules.
return { family = "ag_gemm", variant = "fused", tile = { m = 64, n = 128, k = 64 }, mma = "kturns" }
