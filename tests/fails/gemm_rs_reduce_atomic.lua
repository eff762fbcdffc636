-- expect: reduce = "atomic": must be one of "ordered"
-- the TMA bulk reduce-add (not bit-stable) is not built in v1
return { family = "gemm_rs", reduce = "atomic" }
