-- expect: compute = "scalar": variant = "fused" computes with wgmma
return { family = "ag_gemm", variant = "fused", compute = "scalar" }
