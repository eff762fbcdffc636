-- expect: reduce = "tree": must be one of "ordered", "atomic"
return { family = "gemm_rs", reduce = "tree" }
