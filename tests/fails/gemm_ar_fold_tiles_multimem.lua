-- expect: comm = "multimem": comm = "multimem" sums once every partial is in
return { family = "gemm_ar", fold = "tiles", comm = "multimem", fallback = "emulate" }
