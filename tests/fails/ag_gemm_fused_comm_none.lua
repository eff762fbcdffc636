-- expect: comm = "none": must be one of "auto", "threadload", "multimem", "tma"
-- (no comm is the plain GEMM: family = "gemm")
return { family = "ag_gemm", variant = "fused", comm = "none" }
