-- expect: reduce = "atomic": must be one of "ordered"
-- an allreduce must give every rank the same bits: only the owner's ordered fold does
return { family = "gemm_ar", reduce = "atomic" }
