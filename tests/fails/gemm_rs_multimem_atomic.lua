-- expect: comm = "multimem": comm = "multimem" sums once every partial is in (reduce = "ordered", fold = "after")
return { family = "gemm_rs", comm = "multimem", fallback = "emulate", reduce = "atomic" }
