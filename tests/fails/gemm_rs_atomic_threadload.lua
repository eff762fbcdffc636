-- expect: comm = "threadload": reduce = "atomic" adds with the TMA bulk reduce
return { family = "gemm_rs", reduce = "atomic", comm = "threadload" }
