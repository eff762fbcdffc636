-- expect: comm = "tma": must be one of "threadload", "multimem"
return { family = "gemm_ar", comm = "tma" }
