-- expect: comm = "multimem": must be one of "threadload"
return { family = "gemm_rs", comm = "multimem" }
