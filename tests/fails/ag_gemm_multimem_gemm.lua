-- expect: comm = "multimem": variant = "gemm" takes comm = none
return { family = "ag_gemm", variant = "gemm", comm = "multimem" }
