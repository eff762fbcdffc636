-- expect: comm = "multimem": must be one of "auto", "threadload", "tma"
return { family = "gemm_rs", comm = "multimem" }
