-- expect: variant = "gemm": the plain GEMM is family = "gemm" now
-- The plain GEMM left ag_gemm for a family of its own; the old spelling says where it went.
return { family = "ag_gemm", variant = "gemm", tile = { m = 128, n = 256, k = 64 }, stages = 3 }
