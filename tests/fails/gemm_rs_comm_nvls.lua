-- expect: comm = "nvls": must be one of "auto", "threadload", "tma", "multimem"
return { family = "gemm_rs", comm = "nvls" }
