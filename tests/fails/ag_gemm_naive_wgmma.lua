-- expect: compute = "wgmma": variant = "naive_remote" computes with scalar
return { family = "ag_gemm", variant = "naive_remote", compute = "wgmma" }
