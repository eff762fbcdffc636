-- expect: comm = "none": variant = "fused" takes comm = tma | threadload | multimem
return { family = "ag_gemm", variant = "fused", comm = "none" }
